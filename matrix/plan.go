package matrix

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/shell"
	"github.com/locktorture/locktorture/scenarios"
)

// errPlan is wrapped by every problem with what a matrix is asked to run
// (an unknown scenario or backend, a bad shard, nothing that applies).
var errPlan = errors.New("bad matrix plan")

// PlanOptions say which cells a matrix holds.
type PlanOptions struct {
	// Scenarios are built-in scenario names or scenario file paths (ending
	// in .yaml or .yml); empty means every built-in scenario but the fault
	// families written for compare alone (scenarios.MatrixDefault).
	Scenarios []string
	// Backends narrows the backends; empty means every registered one.
	// Each scenario runs with the backends its `backends:` list names
	// (all, when the list is empty) that are also here.
	Backends []string
	// Seeds is the number of seeds per scenario/backend pair: the
	// scenario's seed, seed+1, ... (zero means 1).
	Seeds int
	// Overrides apply to every cell (Backend and Seed are set per cell).
	Overrides scenarios.Overrides
	// Command repeats the matrix, for its report.
	Command string
	// OneSeed names scenarios planned with their own seed only, whatever
	// Seeds says (a comparison's baseline, which gives each backend's
	// speed and decides no verdict that seeds could change much).
	OneSeed []string
	// Durations are the run times of the named scenarios in this plan,
	// where Overrides set none (a comparison's baseline, which measures
	// speed and needs no more): their cells run and repeat with
	// --duration.
	Durations map[string]time.Duration
	// Versions run every cell once per version set (the version axis);
	// empty: once, with the scenarios' own servers.
	Versions []Version
	// Refuse, when set, says why a version set cannot run a scenario
	// (its image has no valkey-server) or "" when it can: such cells are
	// skipped, with the reason, before any runs.
	Refuse func(v Version, sc *scenarios.Scenario) string
	// Fenced adds, for each backend a scenario states a fenced
	// expectation for (expect.fenced), the same cells again with the
	// resource checking tokens (fencing all): a comparison's fenced cells.
	Fenced bool
}

// Planned is one cell to run: its key, its scenario with the matrix's
// overrides and the cell's backend and seed applied, the flags that name
// the scenario (--scenario NAME or --scenario-file PATH), its expectation.
type Planned struct {
	Key      CellKey
	Scenario *scenarios.Scenario
	Source   []string
	Expect   scenarios.Expectation
	LockFree bool
	// Kinds are the kinds of server the cell's backend starts.
	Kinds []string
	// Version is the version set the cell runs with (zero: none).
	Version Version
	// Args are flags of the cell's own that its repeat command carries
	// (--duration, from PlanOptions.Durations).
	Args []string
	// Exec is the command line of a program of the user's (compare
	// --exec NAME=...), which the cell's repeat command gives run as
	// --exec in place of --backend NAME; empty for another backend.
	Exec string
}

// userNotApplicable says why a scenario does not take a program of the
// user's (backends.RegisterUserProgram), whose row info is.
func userNotApplicable(sc *scenarios.Scenario, info backends.Info) string {
	if sc.Suits != nil {
		var sel []string
		if len(sc.Suits.Kinds) > 0 {
			sel = append(sel, "kinds: "+strings.Join(sc.Suits.Kinds, ", "))
		}
		if len(sc.Suits.Needs) > 0 {
			sel = append(sel, "needs: "+strings.Join(sc.Suits.Needs, ", "))
		}
		over := info.Servers
		if info.Sentinel {
			over += ", which may run over Sentinel"
		}
		return fmt.Sprintf("the scenario runs only over backends that suit it (%s), and a program of the user's (compare --exec, locktest.Compare) is taken as a lease lock over %s, and nothing more", strings.Join(sel, "; "), over)
	}
	return "the scenario runs only over the backends it names: " + strings.Join(sc.Backends, ", ")
}

// Estimate is about how long the cell takes alone, start to end (its
// Cost's parts one after another): its servers' start-up and its client
// processes' start, its clients' run time, the critical sections under
// way when it is up, the check, the report and its servers' stop. It
// orders the cells (the longest first), splits the shards and gives the
// plan's estimate; it never decides a verdict.
func (c Planned) Estimate() time.Duration {
	return c.Cost().Total()
}

// Startup is about how long the cell's servers take to start (the sum
// over its servers of their kind's cluster.Kind.StartupCost: an
// ensemble's members, a Redlock's five, a Sentinel group each count), for
// scheduling only: a lane starts the servers of its next cell ahead when
// this is long enough.
func (c Planned) Startup() time.Duration {
	var d time.Duration
	for _, k := range c.Kinds {
		if kind, ok := cluster.LookupKind(k); ok {
			d += kind.StartupCost * time.Duration(c.servers(k))
		}
	}
	return d
}

// scenarioSource loads a fresh copy of one scenario each time.
type scenarioSource struct {
	load func() (*scenarios.Scenario, error)
	args []string
}

func sourceFor(name string) (scenarioSource, error) {
	if strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || strings.ContainsRune(name, os.PathSeparator) {
		if _, err := scenarios.LoadFile(name); err != nil {
			return scenarioSource{}, err
		}
		return scenarioSource{func() (*scenarios.Scenario, error) { return scenarios.LoadFile(name) }, []string{"--scenario-file", name}}, nil
	}
	if _, err := scenarios.Builtin(name); err != nil {
		return scenarioSource{}, err
	}
	return scenarioSource{func() (*scenarios.Scenario, error) { return scenarios.Builtin(name) }, []string{"--scenario", name}}, nil
}

// Plan lists every cell of the whole matrix (all shards), in order:
// scenarios as given (built-ins sorted), then backends, then seeds. Pairs
// whose scenario cannot take the backend are returned as skipped.
func Plan(opt PlanOptions) (m *Matrix, cells []Planned, err error) {
	names := opt.Scenarios
	if len(names) == 0 {
		names = scenarios.MatrixDefault()
	}
	selected := opt.Backends
	if len(selected) == 0 {
		selected = backends.Names()
	}
	infos := map[string]backends.Info{}
	for _, b := range selected {
		info, _, err := backends.Lookup(b)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: --backends: %w", errPlan, err)
		}
		infos[b] = info
	}
	seeds := max(opt.Seeds, 1)
	if err := checkVersions(opt.Versions); err != nil {
		return nil, nil, err
	}
	m = &Matrix{Kind: Kind, Seeds: seeds, Backends: slices.Clone(selected), Command: opt.Command, Versions: slices.Clone(opt.Versions)}
	seenScenario := map[string]bool{}
	for _, name := range names {
		src, err := sourceFor(name)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: --scenarios: %w", errPlan, err)
		}
		base, err := src.load()
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", errPlan, err)
		}
		if seenScenario[base.Name] {
			return nil, nil, fmt.Errorf("%w: --scenarios: %s named twice", errPlan, base.Name)
		}
		seenScenario[base.Name] = true
		m.Scenarios = append(m.Scenarios, base.Name)
		applies := base.AppliesTo()
		if applies == nil {
			applies = backends.Names()
		}
		for _, b := range selected {
			if why, ok := base.NotRun[b]; ok {
				m.Skipped = append(m.Skipped, Skipped{Scenario: base.Name, Backend: b, Why: "not run: " + strings.TrimSpace(why)})
				continue
			}
			if !slices.Contains(applies, b) {
				if backends.IsUserProgram(b) {
					// A program of the user's runs every family it can: one
					// it cannot is said, with why.
					m.Skipped = append(m.Skipped, Skipped{Scenario: base.Name, Backend: b, Why: "not run: " + userNotApplicable(base, infos[b])})
				}
				continue
			}
			modes := []string{""}
			if _, ok := base.Expect.Fenced[b]; ok && opt.Fenced {
				modes = append(modes, fencedMode)
			}
			n := seeds
			if slices.Contains(opt.OneSeed, base.Name) {
				n = 1
			}
			for _, mode := range modes {
				planned, err := planPair(opt, src, base, b, mode, n, infos[b])
				if err != nil {
					return nil, nil, err
				}
				m.Skipped = append(m.Skipped, planned.skipped...)
				for _, c := range planned.cells {
					m.Planned = append(m.Planned, c.Key)
					cells = append(cells, c)
				}
			}
		}
	}
	if err := userRowsRun(m, selected, cells); err != nil {
		return nil, nil, err
	}
	if len(cells) == 0 {
		why := ""
		if len(m.Skipped) > 0 {
			why = fmt.Sprintf(" (%s × %s: %s)", m.Skipped[0].Scenario, m.Skipped[0].Backend, m.Skipped[0].Why)
		}
		return nil, nil, fmt.Errorf("%w: no scenario applies to the backends chosen%s", errPlan, why)
	}
	return m, cells, nil
}

// userRowsRun refuses a plan where a program of the user's (compare
// --exec, locktest.Compare) has no cell: a row asked for that runs
// nothing would leave its row "not run" and the matrix as expected. The
// error names the row and why its first pair was skipped.
func userRowsRun(m *Matrix, selected []string, cells []Planned) error {
	for _, b := range selected {
		if !backends.IsUserProgram(b) || slices.ContainsFunc(cells, func(c Planned) bool { return c.Key.Backend == b }) {
			continue
		}
		why := "no scenario asked for takes it"
		if i := slices.IndexFunc(m.Skipped, func(s Skipped) bool { return s.Backend == b }); i >= 0 {
			why = m.Skipped[i].Scenario + ": " + m.Skipped[i].Why
		}
		return fmt.Errorf("%w: the row %.40q has no cell in the plan (%s)", errPlan, b, why)
	}
	return nil
}

// fencedMode is the fencing mode of a comparison's fenced cells.
const fencedMode = "all"

// pairPlan is the cells of one scenario/backend pair (one per version
// set and seed), and the version sets (or the pair) skipped, with why.
type pairPlan struct {
	cells   []Planned
	skipped []Skipped
}

// planPair plans one scenario/backend pair's version sets and seeds, with
// the fencing mode overridden when fencing is not empty.
func planPair(opt PlanOptions, src scenarioSource, base *scenarios.Scenario, b, fencing string, seeds int, info backends.Info) (pairPlan, error) {
	var out pairPlan
	versions := opt.Versions
	if len(versions) == 0 {
		versions = []Version{{}}
	}
	for _, v := range versions {
		for i := range seeds {
			sc, err := src.load()
			if err != nil {
				return out, fmt.Errorf("%w: %w", errPlan, err)
			}
			o := opt.Overrides
			bb, seed := b, base.Seed+int64(i)
			o.Backend, o.Seed = &bb, &seed
			if fencing != "" {
				f := fencing
				o.Fencing = &f
			}
			var args []string
			if d, ok := opt.Durations[base.Name]; ok && o.Duration == nil {
				o.Duration = &d
				args = []string{"--duration", d.String()}
			}
			if len(v.Images) > 0 {
				o.Images = maps.Clone(o.Images)
				if o.Images == nil {
					o.Images = map[string]string{}
				}
				maps.Copy(o.Images, v.Images)
			}
			if v.RedisProgram != "" {
				rp := v.RedisProgram
				o.RedisProgram = &rp
			}
			if err := sc.Apply(o); err != nil {
				why := strings.TrimPrefix(err.Error(), scenarios.ErrInvalid.Error()+": ")
				if len(out.cells) == 0 && len(out.skipped) == 0 {
					// The first set cannot take the pair: no set can (a
					// scenario/backend mismatch), said once for the pair.
					out.skipped = append(out.skipped, Skipped{Scenario: base.Name, Backend: b, Why: why})
					return out, nil
				}
				out.skipped = append(out.skipped, Skipped{Scenario: base.Name, Backend: b, Version: v.Name, Why: why})
				break
			}
			if opt.Refuse != nil {
				if why := opt.Refuse(v, sc); why != "" {
					out.skipped = append(out.skipped, Skipped{Scenario: base.Name, Backend: b, Version: v.Name, Why: "refused: " + why})
					break
				}
			}
			key := CellKey{Scenario: base.Name, Backend: b, Seed: seed, Fencing: fencing, Version: v.Name}
			p := Planned{Key: key, Scenario: sc, Source: src.args, Expect: sc.Expected(b), LockFree: info.LockFree, Kinds: info.ServerKinds(), Version: v, Args: args}
			if prog, ok := backends.ProgramOf(b); ok && prog.User {
				// A program of the user's is judged against its claim
				// (--exec-claim); with none, or one that says nothing of
				// this scenario (like:BACKEND where BACKEND is not run),
				// its verdict is reported, never judged. run repeats it
				// with --exec and its servers.
				p.Expect = scenarios.Expectation{Valid: NoClaim}
				if e, ok := sc.ClaimExpectation(prog.Claim); prog.Claim != "" && ok {
					p.Expect = e
				}
				p.Exec = shell.Join(prog.Command)
				if servers := info.ServerList(); !slices.Equal(servers, backends.UserProgramKinds) {
					p.Args = append(p.Args, "--exec-servers", strings.Join(servers, ","))
				}
			}
			out.cells = append(out.cells, p)
		}
	}
	return out, nil
}

// MaxShards is the most shards a plan is split into (--shard i/n): far
// more machines than any CI gives one matrix, and few enough that
// splitting, planning and merging stay instant.
const MaxShards = 1000

// ParseShard reads "i/n" (1 <= i <= n <= MaxShards).
func ParseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		i, err = strconv.Atoi(strings.TrimSpace(a))
		if err == nil {
			n, err = strconv.Atoi(strings.TrimSpace(b))
		}
	}
	if !ok || err != nil || n < 1 || i < 1 || i > n {
		return 0, 0, fmt.Errorf("%w: --shard %q: want i/n with 1 <= i <= n, such as 1/2", errPlan, s)
	}
	if n > MaxShards {
		return 0, 0, fmt.Errorf("%w: --shard %q: at most %d shards", errPlan, s, MaxShards)
	}
	return i, n, nil
}

// CheckShards refuses a split into more shards than the plan has cells
// (a shard would run nothing); shards of 0 or 1 are the whole plan.
func CheckShards(cells []Planned, shard, n int) error {
	if n > 1 && n > len(cells) {
		return fmt.Errorf("%w: --shard %d/%d: the plan has %d cells: at most %d shards", errPlan, shard, n, len(cells), len(cells))
	}
	return nil
}

// Share is the shard-th of n shares of the plan's cells (see Shares): all
// of them when n is 0 or 1, none when the shard is past the cells.
func Share(cells []Planned, shard, n int) []Planned {
	if n <= 1 {
		return cells
	}
	if shard < 1 || shard > n {
		return nil
	}
	shares := Shares(cells, n)
	if shard > len(shares) {
		return nil
	}
	return shares[shard-1]
}

// Shares splits the plan's cells into n shares by their estimated time
// (Estimate), so that shards on n machines end together: the longest cell
// first, each to the share whose estimate is the smallest so far (the
// first of equals). Each share keeps the plan's order. The split depends
// on the plan alone, so every machine computes the same shares. It
// returns at most one share per cell (at least one share): with more
// shares asked for than cells, each cell has a share of its own and the
// shares past the returned ones are empty.
func Shares(cells []Planned, n int) [][]Planned {
	n = min(max(n, 1), max(len(cells), 1))
	order := make([]int, len(cells))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(cells[b].Estimate(), cells[a].Estimate())
	})
	owner := make([]int, len(cells))
	totals := make([]time.Duration, n)
	for _, i := range order {
		least := 0
		for s := range totals {
			if totals[s] < totals[least] {
				least = s
			}
		}
		owner[i] = least
		totals[least] += cells[i].Estimate()
	}
	out := make([][]Planned, n)
	for i, c := range cells {
		out[owner[i]] = append(out[owner[i]], c)
	}
	return out
}

// Total is the sum of the cells' estimates: about how long they take one
// at a time (side by side: Wall).
func Total(cells []Planned) time.Duration {
	var d time.Duration
	for _, c := range cells {
		d += c.Estimate()
	}
	return d
}

// Spread is how far apart shards' estimates are: the largest less the
// smallest, as a fraction of the largest (0 for none, one, or all zero).
func Spread(ests []time.Duration) float64 {
	if len(ests) < 2 {
		return 0
	}
	lo, hi := slices.Min(ests), slices.Max(ests)
	if hi <= 0 {
		return 0
	}
	return float64(hi-lo) / float64(hi)
}

// Command is the command line that repeats the cell, with extra flags.
func (c Planned) Command(extra []string) string {
	parts := append([]string{"locktorture", "run"}, c.Source...)
	if c.Exec != "" {
		parts = append(parts, "--exec", c.Exec)
	} else {
		parts = append(parts, "--backend", c.Key.Backend)
	}
	parts = append(parts, "--seed", strconv.FormatInt(c.Key.Seed, 10))
	if c.Key.Fencing != "" {
		parts = append(parts, "--fencing", c.Key.Fencing)
	}
	parts = append(parts, c.Args...)
	parts = append(parts, extra...)
	parts = append(parts, c.Version.args()...)
	return shell.Join(parts)
}
