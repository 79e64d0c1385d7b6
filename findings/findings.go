// Package findings is locktorture's track record: each finding is a run of
// one lock (a library, or a setup teams adopt) in which two clients held
// the lock at once, or an update was lost, told against upstream's own
// words (findings/evidence.go): a defect when the library's documentation
// promises the opposite, a limitation when the library's or its server's
// documentation warns of it, a gap when the API gives the holder no way to
// know and the documentation says nothing. The registry is the one list
// `locktorture list findings`, `locktorture repro`, `make findings`, the
// matrix's known findings and docs/findings.md agree on (tests check the
// docs' headings, classes and quotes).
//
// A finding reproduces when its run is invalid: the checkers found two
// holders of one lock at once (or a lost update). The day a run of it comes
// out valid, the library has changed and the finding is stale.
package findings

import (
	"embed"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/scenarios"
)

// ErrUnknown is returned for an id no finding has.
var ErrUnknown = errors.New("unknown finding")

// Finding is one entry of the track record.
type Finding struct {
	// ID is what users type (locktorture repro ID).
	ID string
	// Library names what the finding is about, as users know it
	// ("go.etcd.io/etcd/client/v3/concurrency").
	Library string
	// Module is the Go module whose version, as this program was built
	// with it, is the library's version; empty when Package names it.
	Module string
	// Package is the Debian package whose installed version is the
	// library's version (redis-server), when Module is empty.
	Package string
	// Breaks says what breaks, in a few words.
	Breaks string
	// Scenario is the built-in scenario that shows it, run on Backend
	// (with Fencing, when set, as --fencing would); with File set, the
	// name of that file's scenario.
	Scenario string
	// File, when set, names the finding's own scenario file under
	// findings/scenarios (built into the program): its family's scenario
	// shaped so that the story holds by construction on a loaded machine.
	// It is no built-in: matrix and the built-in scenarios' tests judge
	// each built-in by its expectation, and a finding against its claim
	// keeps an expectation its runs contradict.
	File    string
	Backend string
	Fencing string
	// Seeds are the seeds it is known to reproduce with; the first is
	// repro's default.
	Seeds []int64
	// Upstream links the upstream report (or the documentation that
	// warns of it); empty when none was found. Evidence has them all.
	Upstream string
	// AgainstClaim is set when the scenario expects the backend valid, as
	// its library's own claim says: a library row's expectation follows
	// from the claim and is never changed to match a run (docs/compare.md),
	// so `compare` shows the cell NOT AS EXPECTED, naming this finding
	// (Covers), while the finding stands. Every defect and gap is; a
	// limitation is not: the row's claim itself concedes it (it quotes the
	// warning), and the scenario expects the run invalid, as the finding
	// does.
	AgainstClaim bool
	// Also lists more cells of a matrix or a comparison (scenario and
	// backend) whose contradiction of the row's claim this finding
	// explains, beside its own scenario on Backend (see Covers).
	Also []Cell
	// Sometimes is set when every cell the finding covers shows it only
	// sometimes — a race the machine's load decides (rueidislock-restart:
	// how long the restarted server takes to come back) — so it has no
	// primary cell: a matrix whose cells all came out as claimed does not
	// call it stale. Its own scenario file still reproduces it every time.
	Sometimes bool
}

// Cell names a matrix's or comparison's cells by scenario and backend (any
// seed, version and fencing mode).
type Cell struct {
	Scenario, Backend string
}

// registry is every finding, in the order docs/findings.md tells them:
// grouped by class (defects, limitations, gaps; findings/evidence.go), the
// order otherwise of no significance.
var registry = []Finding{
	// Defects.
	{
		ID: "etcd-22082", Library: "etcd client/v3 concurrency.Mutex", Module: "go.etcd.io/etcd/client/v3",
		Breaks:   "a retried Unlock deletes the same session's newer lock: double grant",
		Scenario: "retry-release", Backend: "etcd-concurrency", Seeds: []int64{1, 2, 3}, AgainstClaim: true,
		Upstream: "https://github.com/etcd-io/etcd/issues/22082",
	},
	{
		ID: "rueidislock-renew-partition", Library: "rueidislock", Module: "github.com/redis/rueidis",
		Breaks:   "cut off, its context is cancelled ~1s after the key expired: stale holder",
		Scenario: "renew-partition", Backend: "rueidislock", Seeds: []int64{1, 2, 3}, AgainstClaim: true,
		Also: []Cell{{"renew-partition", "rueidislock-1"}},
	},
	{
		ID: "rueidislock-renew-delay", Library: "rueidislock", Module: "github.com/redis/rueidis",
		Breaks:   "slow replies: the key expires, its context is cancelled ~1s later: stale holder",
		Scenario: "renew-delay", Backend: "rueidislock", Seeds: []int64{1, 2, 3}, AgainstClaim: true,
		Also: []Cell{{"renew-delay", "rueidislock-1"}},
	},
	{
		ID: "rueidislock-failover", Library: "rueidislock", Module: "github.com/redis/rueidis",
		Breaks:   "its Redis down in a failover, the context stays live until a retry reaches the new primary: double grant",
		Scenario: "rueidislock-failover", File: "rueidislock-failover.yaml", Backend: "rueidislock", Seeds: []int64{1, 2, 3}, AgainstClaim: true,
		Also: []Cell{{"failover", "rueidislock"}, {"failover", "rueidislock-1"}},
	},
	{
		ID: "rueidislock-restart", Library: "rueidislock", Module: "github.com/redis/rueidis",
		Breaks:   "its Redis killed and restarted without persistence, the context stays live until a retry reaches the restarted server: double grant",
		Scenario: "rueidislock-restart", File: "rueidislock-restart.yaml", Backend: "rueidislock-1", Seeds: []int64{1, 2, 3}, AgainstClaim: true,
		// Its cells show it only when the restart is slow (a loaded
		// machine: 6 to 12 of 20 seeds here), never on a quick one.
		Also: []Cell{{"restart", "rueidislock-1"}, {"restart", "rueidislock"}}, Sometimes: true,
	},
	{
		ID: "curator-kill-session", Library: "Apache Curator (ZooKeeper Java client)", Package: "libcurator-recipes-java",
		Breaks:   "its session closed, the holder hears SUSPENDED 100ms after the drop, while ZooKeeper grants the next at once: double grant",
		Scenario: "curator-kill-session", File: "curator-kill-session.yaml", Backend: "curator", Seeds: []int64{1, 2, 3}, AgainstClaim: true,
		Also: []Cell{{"kill-session", "curator"}},
	},
	{
		ID: "tooz-zookeeper-kill-session", Library: "tooz (zookeeper driver)", Package: "python3-tooz",
		Breaks:   "its session closed, kazoo's lock node goes and ZooKeeper grants the next, while tooz tells the holder nothing: double grant",
		Scenario: "kill-session", Backend: "tooz-zookeeper", Seeds: []int64{1, 2, 3}, AgainstClaim: true,
		// The same silence when the session expires (a partition or slow
		// replies past the session timeout): tooz's claim stays the
		// expectation there too (one rule), and this finding names it.
		Also: []Cell{{"renew-partition", "tooz-zookeeper"}, {"renew-delay", "tooz-zookeeper"}, {"zk-partition", "tooz-zookeeper"}},
	},
	// Limitations.
	{
		ID: "redlock-clock-jump", Library: "redsync (Redlock)", Module: "github.com/go-redsync/redsync/v4",
		Breaks:   "a server's clock jump expires one of the majority's keys: double grant",
		Scenario: "redlock-clock-jump", Backend: "redsync", Seeds: []int64{1, 2, 3},
		Upstream: "https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html",
	},
	{
		ID: "redlock-restart", Library: "redsync (Redlock)", Module: "github.com/go-redsync/redsync/v4",
		Breaks:   "a server restarted without persistence forgets the lock: double grant",
		Scenario: "redlock-restart", Backend: "redsync", Seeds: []int64{1, 2, 3},
		Upstream: "https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html",
	},
	{
		ID: "sentinel-failover", Library: "Redis Sentinel + SET NX PX", Package: "redis-server",
		Breaks:   "a failover promotes a replica that never got the lock: double grant",
		Scenario: "failover", Backend: "redis-token", Seeds: []int64{1, 2, 3},
		Upstream: "https://redis.io/docs/latest/develop/clients/patterns/distributed-locks/",
	},
	{
		ID: "redis-fenced-failover", Library: "redis-fenced INCR token over Sentinel", Package: "redis-server",
		Breaks:   "the token counter fails over too: the same token twice, fencing cannot tell",
		Scenario: "failover", Backend: "redis-fenced", Fencing: "writes", Seeds: []int64{1, 2, 3},
	},
	{
		ID: "pgbouncer-advisory", Library: "PgBouncer transaction pool + pg advisory lock", Package: "pgbouncer",
		Breaks:   "a session advisory lock stays on a pooled server connection: two holders",
		Scenario: "pg-bouncer-transaction", Backend: "pg-advisory", Seeds: []int64{1, 2, 3},
		Upstream: "https://www.pgbouncer.org/features.html",
	},
	{
		ID: "tooz-redis-renew-delay", Library: "tooz (redis driver)", Package: "python3-tooz",
		Breaks:   "slow replies: the heartbeat lets the lock's key expire, the failed reacquire is only logged: stale holder",
		Scenario: "renew-delay", Backend: "tooz-redis", Seeds: []int64{1, 2, 3},
		Upstream: "https://opendev.org/openstack/tooz/src/tag/3.1.0/doc/source/user/drivers.rst",
	},
	// Gaps.
	{
		ID: "zk-lock-renew-partition", Library: "go-zookeeper zk.Lock", Module: "github.com/go-zookeeper/zk",
		Breaks:   "never tells the holder its session expired: stale holder",
		Scenario: "renew-partition", Backend: "zk-lock", Seeds: []int64{1, 2, 3}, AgainstClaim: true,
		Also:     []Cell{{"renew-delay", "zk-lock"}, {"zk-partition", "zk-lock"}},
		Upstream: "https://github.com/samuel/go-zookeeper/issues/20",
	},
	{
		ID: "zk-lock-kill-session", Library: "go-zookeeper zk.Lock", Module: "github.com/go-zookeeper/zk",
		Breaks:   "its session closed, the holder is told nothing while ZooKeeper grants the next: double grant",
		Scenario: "kill-session", Backend: "zk-lock", Seeds: []int64{1, 2, 3}, AgainstClaim: true,
		Upstream: "https://github.com/samuel/go-zookeeper/issues/20",
	},
}

// files holds the findings' own scenario files (Finding.File).
//
//go:embed scenarios/*.yaml
var files embed.FS

// All returns every finding, in the docs' order.
func All() []Finding { return slices.Clone(registry) }

// IDs returns every finding's id, in the docs' order.
func IDs() []string {
	out := make([]string, len(registry))
	for i, f := range registry {
		out[i] = f.ID
	}
	return out
}

// Lookup returns the finding id names, or an error wrapping ErrUnknown
// that lists the known ids.
func Lookup(id string) (Finding, error) {
	for _, f := range registry {
		if f.ID == id {
			return f, nil
		}
	}
	return Finding{}, fmt.Errorf("%w %q (known: %s)", ErrUnknown, id, strings.Join(IDs(), ", "))
}

// Covers lists the cells of a matrix or comparison whose contradiction
// of the row's claim the finding explains: its own scenario on its backend
// (a built-in's; a finding with a file of its own runs a scenario no
// matrix has) and Also. A finding the row's claim concedes (not
// AgainstClaim) explains no contradiction: its cells are expected invalid.
func (f Finding) Covers() []Cell {
	if !f.AgainstClaim {
		return nil
	}
	var out []Cell
	if f.File == "" {
		out = append(out, Cell{f.Scenario, f.Backend})
	}
	return append(out, f.Also...)
}

// Covering returns the id of the finding that explains a contradiction
// of the row's claim in a cell of scenario on backend, or "".
func Covering(scenario, backend string) string {
	for _, f := range registry {
		if slices.Contains(f.Covers(), Cell{scenario, backend}) {
			return f.ID
		}
	}
	return ""
}

// Primary is the cell a finding shows first: its own scenario on its
// backend, or, for a finding with a file of its own, the first cell Also
// names; none for a finding that shows only Sometimes. A finding whose
// primary cells all came out as claimed did not show (matrix.Stale); its
// other cells may show it only sometimes.
func (f Finding) Primary() (Cell, bool) {
	c := f.Covers()
	if len(c) == 0 || f.Sometimes {
		return Cell{}, false
	}
	return c[0], true
}

// PrimaryOf returns the id of the finding whose primary cell is scenario on
// backend, or "".
func PrimaryOf(scenario, backend string) string {
	for _, f := range registry {
		if c, ok := f.Primary(); ok && c == (Cell{scenario, backend}) {
			return f.ID
		}
	}
	return ""
}

// Version is the library's version here: the Go module's as this program
// was built with it, or the installed Debian package's; "unknown" when
// neither can be read.
func (f Finding) Version() string {
	if f.Module != "" {
		return backends.Library{Module: f.Module}.Version()
	}
	if f.Package != "" {
		out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", f.Package).Output()
		if v := strings.TrimSpace(string(out)); err == nil && v != "" {
			return v
		}
	}
	return "unknown"
}

// Line is the finding's line of `locktorture list findings`: its id, its
// class (defect, limitation, gap), the library and version, what breaks.
func (f Finding) Line() string {
	return f.ID + "\t" + string(f.Class()) + "\t" + f.Library + " " + f.Version() + "\t" + f.Breaks
}

// Load returns the built-in scenario that reproduces the finding, set to
// its backend, fencing mode and seed (seed 0: the finding's first).
func (f Finding) Load(seed int64) (*scenarios.Scenario, error) { return f.scenario(seed) }

func (f Finding) scenario(seed int64) (*scenarios.Scenario, error) {
	sc, err := f.load()
	if err != nil {
		return nil, fmt.Errorf("finding %s: %w", f.ID, err)
	}
	if seed == 0 && len(f.Seeds) > 0 {
		seed = f.Seeds[0]
	}
	o := scenarios.Overrides{Backend: &f.Backend}
	if f.Fencing != "" {
		o.Fencing = &f.Fencing
	}
	if seed != 0 {
		o.Seed = &seed
	}
	if err := sc.Apply(o); err != nil {
		return nil, fmt.Errorf("finding %s: %w", f.ID, err)
	}
	return sc, nil
}

// load reads the finding's scenario: its own file, or the built-in.
func (f Finding) load() (*scenarios.Scenario, error) {
	if f.File == "" {
		return scenarios.Builtin(f.Scenario)
	}
	data, err := files.ReadFile("scenarios/" + f.File)
	if err != nil {
		return nil, err
	}
	return scenarios.Parse(data, f.ScenarioPath())
}

// ScenarioPath is where the finding's own scenario file is in the
// repository (findings/scenarios/...), for `run --scenario-file`; "" for
// a finding that runs a built-in.
func (f Finding) ScenarioPath() string {
	if f.File == "" {
		return ""
	}
	return "findings/scenarios/" + f.File
}

// Reproduced reports whether a run of the finding shows it again: the run
// is invalid.
func Reproduced(r *checker.Results) bool { return r != nil && r.Valid == checker.Invalid }

// Signal says in words when the earlier holder of overlap ov heard from
// its library that the lock was gone, from the history ops: the first
// `lost` event of that process on the key after its grant, timed against
// the later holder's grant (by which the key had left the server, for a
// stale holder). "" when the history says nothing of it.
func Signal(ops []history.Op, ov checker.Overlap) string {
	p, key := ov.Earlier.Process, ov.Key
	later := ov.Start
	for _, op := range ops {
		if op.Process != p || op.Key != key || op.Time < ov.Earlier.Start {
			continue
		}
		switch {
		case op.F == history.Lost && op.Type == history.Invoke:
			d := float64(op.Time-later) / 1e9
			if d >= 0 {
				return fmt.Sprintf("the library told client %d the lock was gone (a lost event) %.2fs after client %d was granted it — the key had left the server by then", p, d, ov.Later.Process)
			}
			return fmt.Sprintf("the library told client %d the lock was gone (a lost event) %.2fs before client %d was granted it", p, -d, ov.Later.Process)
		case op.F == history.Release && op.Type == history.Invoke:
			return fmt.Sprintf("the library never told client %d the lock was gone: it went on until its release, %.2fs after client %d was granted the lock", p, float64(op.Time-later)/1e9, ov.Later.Process)
		}
	}
	if ov.Earlier.Open {
		return fmt.Sprintf("the library never told client %d the lock was gone, to the end of the run", p)
	}
	return ""
}
