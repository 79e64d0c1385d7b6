package locktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/reports"
	"github.com/locktorture/locktorture/runner"
	"github.com/locktorture/locktorture/scenarios"
)

// Suite says which lock to torture, how, and what it claims.
type Suite struct {
	// New builds one client's lock (required).
	New NewLock
	// Kinds are the kinds of server the lock uses: KindRedis (the default,
	// one redis-server), KindPostgres, KindEtcd, KindZooKeeper.
	Kinds []string
	// Scenarios are built-in scenario names ("kleppmann-pause") or paths
	// of scenario files (ending in .yaml or .yml). Empty: baseline and
	// every built-in scenario written for a backend over the lock's
	// servers (with Like set, for that backend) that needs one server of
	// each kind (Scenarios lists them). The fault families of locktorture
	// compare (scenarios.Families: pause, partition, delay, ...) and the
	// scenarios with several servers of a kind (failover,
	// failover-leader) run when named; clock is refused, since a client
	// process's clock is its own, and kill-session finds only sessions
	// the harness names.
	Scenarios []string
	// Claim is what the lock promises (default Safe); Claims, by scenario
	// name, override it for some scenarios. Like, when set, replaces both
	// with the built-in expectations of the closest backend
	// ("redis-token", "redis-fenced", "pg-advisory", ...: locktorture list
	// backends).
	Claim  Claim
	Claims map[string]Claim
	Like   string
	// Servers is where servers run when neither LOCKTEST_SERVERS nor
	// -locktest.servers says: local (the default), docker (blank-import
	// github.com/locktorture/locktorture/cluster/docker in the test), or
	// a servers file's path (servers someone else runs).
	Servers string
	// Images name, with docker servers, the image each kind of server runs
	// from, by kind (KindRedis, KindPostgres, ...) or "all" (official
	// images by default). LOCKTEST_IMAGES (all=REF or KIND=REF,...) wins.
	Images map[string]string
	// InProcess runs the clients as goroutines of the test process instead
	// of processes. Faster to start, but a pause is then cooperative: it
	// stops a client at its next step and leaves the lock's own goroutines
	// (a lease watchdog) running, so it cannot catch what a real
	// stop-the-world pause does.
	InProcess bool
}

// Result is one scenario's outcome.
type Result struct {
	// Scenario is the scenario's name; Seed the seed it ran with.
	Scenario string
	Seed     int64
	// Results are the checkers' results (results.json).
	Results *checker.Results
	// Met is whether the verdict matched the claim; Why says which way it
	// differed when not.
	Met bool
	Why string
	// Dir is the run's full report (index.html, history.jsonl,
	// results.json...), kept when the subtest failed, or with
	// LOCKTEST_KEEP set (-locktest.keep) when it passed too; empty when
	// removed.
	Dir string

	sc *scenarios.Scenario
}

// Meets judges the same run against another claim: whether the verdict
// matches it and, when not, which way it differs.
func (r *Result) Meets(c Claim) (bool, string) {
	if r == nil || r.Results == nil || r.sc == nil {
		return false, "no results"
	}
	return judge(r.Results, claimExpectation(c, r.sc), r.sc)
}

// Run runs each of the suite's scenarios as a subtest of t (t.Run with the
// scenario's name) against real servers, with the lock's clients as
// processes (the test binary itself: TestMain must call Main), and fails a
// subtest whose verdict differs from the claim, saying which way, with the
// seed, the command that repeats it and the report's path. It returns
// every scenario's result (nil entries for scenarios that were skipped).
func Run(t *testing.T, s Suite) []*Result {
	t.Helper()
	id := callID(t)
	names, err := s.scenarioNames()
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	if child := childID(); child != "" {
		if child == id {
			serveChild(t, s)
		}
		return make([]*Result, len(names)) // another call's client process
	}
	if s.New == nil {
		t.Fatal("locktest: Suite.New is nil: give the constructor of your lock")
	}
	if !s.InProcess && !installed() {
		t.Fatal("locktest: clients run as processes of the test binary: add\n\tfunc TestMain(m *testing.M) { locktest.Main(m) }\n(or set Suite.InProcess, whose pauses are cooperative)")
	}
	if s.InProcess {
		t.Log("locktest: in-process clients: a pause stops a client at its next step only; the lock's own goroutines run on (run without InProcess for real pauses)")
	}
	parent := t.Name()
	out := make([]*Result, len(names))
	for i, name := range names {
		t.Run(scenarioLabel(name), func(t *testing.T) {
			out[i] = runScenario(t, s, name, id, parent)
		})
	}
	return out
}

// served is set in a client process once it has served the protocol,
// with serve's error: Main then exits with it.
var (
	served   bool
	serveErr error
)

// serveChild is a client process's whole life: it serves the protocol on
// the saved stdout, then ends the test that started it as skipped, so that
// the test's cleanups run (a t.TempDir it made before calling Run or
// Compare is removed: the process used to exit here, leaving one behind
// per client process), and Main exits.
func serveChild(t *testing.T, s Suite) {
	out := protoOut
	if out == nil {
		out = os.Stdout
	}
	err := serve(context.Background(), os.Stdin, out, s.New)
	if err != nil {
		fmt.Fprintf(os.Stderr, "locktest client: %v\n", err)
	}
	mainMu.Lock()
	served, serveErr = true, err
	mainMu.Unlock()
	t.SkipNow()
}

// scenarioLabel is a scenario's subtest name: a file's base name without
// its extension.
func scenarioLabel(name string) string {
	if isFile(name) {
		return strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	}
	return name
}

func isFile(name string) bool {
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || strings.ContainsRune(name, filepath.Separator)
}

// kinds are the lock's kinds of server.
func (s Suite) kinds() []string {
	if len(s.Kinds) == 0 {
		return []string{cluster.DefaultKind}
	}
	return s.Kinds
}

// checkKinds refuses a kind of server the harness does not know.
func (s Suite) checkKinds() error {
	for _, k := range s.kinds() {
		if !slices.Contains(cluster.KindNames(), k) {
			return fmt.Errorf("unknown kind of server %q in Kinds (known: %s)", k, strings.Join(cluster.KindNames(), ", "))
		}
	}
	return nil
}

// scenarioNames are the scenarios to run.
func (s Suite) scenarioNames() ([]string, error) {
	if err := s.checkKinds(); err != nil {
		return nil, err
	}
	if len(s.Scenarios) > 0 {
		return s.Scenarios, nil
	}
	var out []string
	for _, n := range scenarios.BuiltinNames() {
		sc, err := scenarios.Builtin(n)
		if err != nil {
			return nil, err
		}
		if applies(sc, s.kinds(), s.Like) && takesProcesses(sc, s.kinds()) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no built-in scenario applies to a lock over %s; name scenario files in Suite.Scenarios", strings.Join(s.kinds(), ", "))
	}
	return out, nil
}

// applies reports whether a built-in scenario suits a lock over kinds: it
// is written for every backend with no fault (baseline), or for a backend
// over those kinds only (for like, with like set), is no fault family,
// needs one server of each kind, and follows a script (no random faults).
func applies(sc *scenarios.Scenario, kinds []string, like string) bool {
	if sc.Backend == scenarios.ExecBackend || sc.Nemesis.Random != nil || sc.Redis == backends.RedisSentinel ||
		sc.Ensemble() {
		return false
	}
	if f := scenarios.FamilyOf(sc.Name); slices.Contains(scenarios.Families, f) {
		// A fault family (locktorture compare) is written for the rows
		// it suits (renew-partition: locks that renew), which a lock of
		// the user's may not be: it runs when named.
		return false
	}
	if sc.AppliesTo() == nil {
		// Written for every backend: baseline, and the fault families
		// (pause, partition, ...), some of whose faults need more of a
		// client than the protocol carries (its named session, its
		// clock): those run when named.
		return len(sc.Nemesis.Script) == 0
	}
	if like != "" {
		return sc.Applies(like)
	}
	cands := sc.AppliesTo()
	for _, b := range cands {
		if b == "redlock" || b == "redsync" { // quorum locks: five servers
			continue
		}
		if backendOver(b, kinds) {
			return true
		}
	}
	return false
}

// takesProcesses reports whether sc runs with the user's lock in client
// processes, as prepare sets it up: a scenario written for the harness's
// own in-process clients (retry-release, whose release is retried in the
// background) does not. It changes sc.
func takesProcesses(sc *scenarios.Scenario, kinds []string) bool {
	sc.Backends, sc.Suits = nil, nil
	sc.Exec = &scenarios.Exec{Command: []string{"locktest-client"}, Servers: kinds}
	return sc.Apply(scenarios.Overrides{Backend: ptr(scenarios.ExecBackend), ClientMode: ptr(scenarios.ClientProcess)}) == nil
}

// backendOver reports whether backend b runs over kinds only.
func backendOver(b string, kinds []string) bool {
	info, _, err := backends.Lookup(b)
	if err != nil || len(info.Kinds) == 0 {
		return false
	}
	for _, k := range info.Kinds {
		if !slices.Contains(kinds, k) {
			return false
		}
	}
	return true
}

// load reads a built-in scenario or a scenario file.
func load(name string) (*scenarios.Scenario, error) {
	if isFile(name) {
		return scenarios.LoadFile(name)
	}
	return scenarios.Builtin(name)
}

// runScenario runs one scenario as the current subtest.
func runScenario(t *testing.T, s Suite, name, id, parent string) *Result {
	t.Helper()
	sc, err := load(name)
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	claim := s.Claim
	if c, ok := s.Claims[sc.Name]; ok {
		claim = c
	}
	exp := claimExpectation(claim, sc)
	if s.Like != "" {
		exp = likeExpectation(s.Like, sc)
	}
	if err := prepare(s, sc, id, parent); err != nil {
		t.Fatalf("locktest: scenario %s: %v", name, err)
	}
	where := serversSetting(s)
	images, err := s.images()
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	shared := ""
	if isShareable(sc, where) && installed() { // Main stops shared servers
		f, err := sharedServers(where, s.kinds(), images)
		if err != nil {
			skipOrFail(t, err)
		}
		shared = f
	}
	if shared != "" {
		err = sc.Apply(scenarios.Overrides{Servers: ptr(cluster.ServersExternal), ServersFile: ptr(shared)})
	} else if strings.HasSuffix(where, ".yaml") || strings.HasSuffix(where, ".yml") {
		err = sc.Apply(scenarios.Overrides{Servers: ptr(cluster.ServersExternal), ServersFile: ptr(where)})
	} else {
		err = sc.Apply(scenarios.Overrides{Servers: ptr(where), Images: images})
	}
	if err != nil {
		t.Fatalf("locktest: scenario %s: %v", name, err)
	}
	store, err := storeRoot()
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	repeat := fmt.Sprintf("go test -run '%s' -locktest.seed=%d", runPattern(t.Name()), sc.Seed)
	start := time.Now()
	out, err := runner.Run(context.Background(), sc, runner.Options{Store: store, Command: repeat})
	if err != nil && (out == nil || !errors.Is(err, runner.ErrReport)) {
		skipOrFail(t, fmt.Errorf("scenario %s: %w", name, err))
	}
	span := time.Since(start)
	res := &Result{Scenario: sc.Name, Seed: sc.Seed, Results: out.Results, sc: sc}
	res.Met, res.Why = judge(out.Results, exp, sc)
	t.Logf("%s: %s in %s (scenario %s); %s", sc.Name, out.Results.Valid, span.Round(time.Millisecond), sc.Duration, reports.Headline(out.Results))
	if res.Met && !keepPassing() {
		removeRun(store, out.Dir)
		return res
	}
	res.Dir = out.Dir
	keepStore()
	if res.Met {
		t.Logf("%s: report kept (%s): %s", sc.Name, EnvKeep, filepath.Join(out.Dir, "index.html"))
		return res
	}
	t.Errorf("locktest: %s: %s\n%s\nseed %d; repeat with: %s\nfull report: %s", sc.Name, res.Why,
		strings.TrimRight(out.Summary, "\n"), sc.Seed, repeat, filepath.Join(out.Dir, "index.html"))
	return res
}

var inprocCalls struct {
	sync.Mutex
	n int
}

// nextInproc numbers the in-process backends.
func nextInproc() int {
	inprocCalls.Lock()
	defer inprocCalls.Unlock()
	inprocCalls.n++
	return inprocCalls.n
}

func ptr[T any](v T) *T { return &v }

// prepare turns a scenario into a run of the user's lock: the exec backend
// running the test binary as its clients, over the lock's servers, with
// the seed and -short applied.
func prepare(s Suite, sc *scenarios.Scenario, id, parent string) error {
	seed, ok, err := seedOverride()
	if err != nil {
		return err
	}
	var o scenarios.Overrides
	if ok {
		o.Seed = &seed
	}
	if testing.Short() {
		if d := shortDuration(sc); d < sc.Duration.D() {
			o.Duration = &d
		}
	}
	sc.Backends, sc.Suits = nil, nil
	if s.InProcess {
		o.Backend, o.ClientMode = ptr(inprocBackend(s, nextInproc())), ptr(scenarios.ClientInproc)
		return sc.Apply(o)
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("the test binary, to run clients: %w", err)
	}
	sc.Exec = &scenarios.Exec{
		Command: []string{self, "-test.run=" + runPattern(parent), "-test.count=1"},
		Env:     map[string]string{envChild: id},
		Servers: s.kinds(),
	}
	o.Backend, o.ClientMode = ptr(scenarios.ExecBackend), ptr(scenarios.ClientProcess)
	return sc.Apply(o)
}

// shortDuration is a scenario's shortest meaningful length for -short:
// its scripted faults' end (the last step's at + for) plus one lease, at
// least one second; a scenario with random faults keeps its length.
func shortDuration(sc *scenarios.Scenario) time.Duration {
	if sc.Nemesis.Random != nil {
		return sc.Duration.D()
	}
	end := time.Second
	for _, st := range sc.Nemesis.Script {
		if e := st.At.D() + st.For.D() + sc.TTL.D(); e > end {
			end = e
		}
	}
	return end
}

// isShareable reports whether a scenario can run on servers shared with
// other subtests: its faults act on clients only, it needs one plain
// server of each kind, and the servers are the suite's to start.
func isShareable(sc *scenarios.Scenario, where string) bool {
	if where != cluster.ServersLocal && where != cluster.ServersDocker {
		return false
	}
	if sc.Redis == backends.RedisSentinel || !sc.DefaultServers() || sc.Persistence {
		return false
	}
	probe := *sc
	probe.Servers, probe.ServersFile = cluster.ServersExternal, "servers.yaml"
	probe.Uncontrolled = []string{"the shared servers"}
	return probe.Validate() == nil
}

// images are the docker images: LOCKTEST_IMAGES, else Suite.Images.
func (s Suite) images() (map[string]string, error) {
	env := os.Getenv(EnvImages)
	if env == "" {
		return s.Images, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(env, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("%s=%q: want KIND=REF[,KIND=REF...] (KIND redis, postgres, etcd, zookeeper or all)", EnvImages, env)
		}
		out[k] = v
	}
	return out, cluster.CheckImages(out)
}

// skipOrFail skips the test when the servers cannot run here (a program
// missing, no Docker engine), saying what to install; it fails it
// otherwise.
func skipOrFail(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, cluster.ErrNoProvider) {
		t.Fatalf("locktest: %v: to run servers in containers, the test must import _ \"github.com/locktorture/locktorture/cluster/docker\"", err)
	}
	if errors.Is(err, cluster.ErrMissingBinary) || strings.Contains(err.Error(), "no Docker engine") {
		msg := strings.ReplaceAll(firstLine(err.Error()), " (make deps)", "")
		t.Skipf("locktest: cannot run servers here: %s (or run them in containers: %s=docker)", msg, EnvServers)
	}
	keepStore() // the error may name a log in the store
	t.Fatalf("locktest: %v", err)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Scenarios returns the scenarios Run runs for s, in the order it runs
// them: Suite.Scenarios as given (a scenario file runs as the subtest of
// its base name), or when it is empty the built-in ones that apply to the
// lock's servers (Suite.Kinds, and Suite.Like). Each is the name of a
// subtest: go test -run 'TestMyLock/kleppmann-pause'.
func Scenarios(s Suite) ([]string, error) {
	names, err := s.scenarioNames()
	if err != nil {
		return nil, fmt.Errorf("locktest: %w", err)
	}
	return slices.Clone(names), nil
}

// BuiltinScenarios lists every built-in scenario's name (locktorture list
// scenarios describes each): what Suite.Scenarios may name, beyond the
// defaults Scenarios returns. Some are written for another kind of server
// or for a client the harness drives itself (redis-py-*), or need a
// client's clock (clock), and do not fit every lock.
func BuiltinScenarios() []string { return scenarios.BuiltinNames() }
