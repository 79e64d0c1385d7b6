// Package shrink turns a failing run into the smallest scenario that
// still fails: the run's recorded faults become a scripted schedule
// (script.go), delta debugging drops the faults that do not matter
// (ddmin.go), and then fewer clients (clients.go), fewer keys, a shorter
// run and shorter faults are tried, each candidate run again and again on real
// servers and kept only when every re-run fails the same checker.
//
// The search is deterministic: the candidates come in a fixed order, the
// re-runs of a candidate use seeds derived from the run's seed, and the
// answer is written in whole steps of time, so a failure that reproduces
// reliably shrinks to the same file every time.
package shrink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/owner"
	"github.com/locktorture/locktorture/internal/words"
	"github.com/locktorture/locktorture/reports"
	"github.com/locktorture/locktorture/runner"
	"github.com/locktorture/locktorture/scenarios"
)

// Sentinel errors of this package. The first three wrap
// runner.ErrBadInput (exit 254).
var (
	// errNoRun is wrapped when a directory holds no stored run.
	errNoRun = fmt.Errorf("%w: no stored run", runner.ErrBadInput)
	// errNotInvalid is wrapped when the run did not fail.
	errNotInvalid = fmt.Errorf("%w: the run is not invalid", runner.ErrBadInput)
	// errNoFaults is wrapped when the run's history holds no fault.
	errNoFaults = fmt.Errorf("%w: no faults to drop", runner.ErrBadInput)
	// ErrNotReproduced is wrapped when the run's faults, scripted, did not
	// fail again on every re-run: there is nothing to shrink from.
	ErrNotReproduced = errors.New("the failure did not reproduce")
)

// Files a shrink writes into the run's directory.
const (
	FileShrunk = "shrunk.yaml"
	FileHTML   = reports.FileShrink
	FileLog    = "shrink.log"
)

// DefaultReruns is how many times each candidate runs unless told.
const DefaultReruns = 3

// grid is the step of time the search moves in: run and fault lengths
// are multiples of it, so the answer reads well and repeats.
const grid = 250 * time.Millisecond

// lead is where the first fault of a shifted schedule starts: the clients
// have connected and taken a lock or two by then.
const lead = 300 * time.Millisecond

// afterFaults is the least time a candidate runs after its faults: the
// cut at a failure's first witness, and each subset of the faults phase.
// The duration phase then shortens the answer on the grid.
const afterFaults = 2 * time.Second

// Options tune a shrink.
type Options struct {
	// Reruns is how many times each candidate runs (default 3); it is kept
	// only if every run is invalid with the target checker failing.
	Reruns int
	// Checker is the checker that must fail (default: the first of the
	// run's failing checkers, in checker.All's order).
	Checker string
	// TempDir holds the scratch store of candidate runs (default: the
	// system's temporary directory); it is removed at the end.
	TempDir string
	// LinearizableTimeout bounds porcupine in candidate runs (zero: 30s).
	LinearizableTimeout time.Duration
	// Progress, when set, is told after every candidate run.
	Progress func(Progress)
	// Log, when set, gets a line per candidate.
	Log io.Writer

	// run makes one candidate run (nil: runner.Run into the scratch
	// store); tests give the search a deterministic judge instead.
	run func(ctx context.Context, sc *scenarios.Scenario, store string) (*runner.Outcome, error)
}

// Progress is where a shrink stands.
type Progress struct {
	// Phase is what the search is trying: reproduce, faults, time,
	// clients, keys, fault-lengths.
	Phase string
	// Candidates tried and runs made so far.
	Candidates, Runs int
	// Best is the smallest failing scenario so far, nil until one failed.
	Best *Shape
	// Elapsed since the shrink began.
	Elapsed time.Duration
}

// Shape is a candidate's size.
type Shape struct {
	Faults, Clients, Keys int
	Duration              time.Duration
}

// String is "2 faults, 2 clients, 1 key, 3.5s".
func (s Shape) String() string {
	return fmt.Sprintf("%s, %s, %s, %s", words.Count(s.Faults, "fault", "faults"), words.Count(s.Clients, "client", "clients"), words.Count(s.Keys, "key", "keys"), s.Duration)
}

// Result is what a shrink found.
type Result struct {
	// Dir is the run's directory.
	Dir string
	// Original is the run's effective scenario; OriginalOps its history
	// and OriginalResults its results.
	Original        *scenarios.Scenario
	OriginalOps     []history.Op
	OriginalResults *checker.Results
	// Faults are the run's faults as it recorded them, as scripted steps.
	Faults []RecordedFault
	// Checker is the checker every kept candidate failed.
	Checker string
	// Reruns is how many runs each candidate had.
	Reruns int
	// Shrunk is the smallest scenario that failed every re-run (nil when
	// none did); Kept indexes Faults for its steps, in order; ShrunkOps
	// and ShrunkResults are one of its failing runs.
	Shrunk        *scenarios.Scenario
	Kept          []int
	ShrunkOps     []history.Op
	ShrunkResults *checker.Results
	// Candidates tried, runs made, and the time it took.
	Candidates, Runs int
	Elapsed          time.Duration
}

// OriginalShape is the original run's size, with its faults counted as
// recorded.
func (r *Result) OriginalShape() Shape {
	return Shape{Faults: len(r.Faults), Clients: r.Original.Clients, Keys: r.Original.Keys, Duration: r.Original.Duration.D()}
}

// ShrunkShape is the shrunk scenario's size.
func (r *Result) ShrunkShape() Shape {
	s := r.Shrunk
	return Shape{Faults: len(s.Nemesis.Script), Clients: s.Clients, Keys: s.Keys, Duration: s.Duration.D()}
}

// Load reads a stored run: its scenario, history and results, and checks
// that it is a failing run with faults to shrink. It starts nothing.
func Load(dir string) (*Result, error) {
	for _, f := range []string{"history.jsonl", reports.FileResults, reports.FileScenario} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return nil, fmt.Errorf("%w in %s (no %s)", errNoRun, dir, f)
		}
	}
	res, err := reports.ReadResults(filepath.Join(dir, reports.FileResults))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", runner.ErrBadInput, err)
	}
	if res.Valid != checker.Invalid {
		return nil, fmt.Errorf("%w: %s is %s; only a failing run shrinks", errNotInvalid, dir, res.Valid)
	}
	sc, err := scenarios.LoadFile(filepath.Join(dir, reports.FileScenario))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", runner.ErrBadInput, err)
	}
	ops, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", runner.ErrBadInput, err)
	}
	recs, err := fromHistory(ops, eventsOf(sc))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", runner.ErrBadInput, dir, err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: the history in %s records none (a failure without faults is already as small as it gets)", errNoFaults, dir)
	}
	return &Result{Dir: dir, Original: sc, OriginalOps: ops, OriginalResults: res, Faults: recs}, nil
}

// targetChecker is the checker a shrink holds candidates to.
func targetChecker(res *checker.Results, want string) (string, error) {
	v := res.Checkers.Verdicts()
	if want != "" {
		if v[want] != checker.Invalid {
			return "", fmt.Errorf("%w: --checker %s did not fail in this run (failing: %s)", runner.ErrBadInput, want, strings.Join(failing(v), ", "))
		}
		return want, nil
	}
	if f := failing(v); len(f) > 0 {
		return f[0], nil
	}
	return "", fmt.Errorf("%w: no checker failed in this run", errNotInvalid)
}

func failing(v map[string]checker.Validity) []string {
	var out []string
	for _, n := range checker.All {
		if v[n] == checker.Invalid {
			out = append(out, n)
		}
	}
	return out
}

// Shrink shrinks the failing run in dir. It returns the best scenario
// found even when it stops early: on an interrupt (the error wraps
// runner.ErrInterrupted) the Result holds what had failed every re-run so
// far. ErrNotReproduced means the scripted faults did not fail again.
func Shrink(ctx context.Context, dir string, opt Options) (*Result, error) {
	r, err := Load(dir)
	if err != nil {
		return nil, err
	}
	if opt.Reruns <= 0 {
		opt.Reruns = DefaultReruns
	}
	if opt.run == nil {
		opt.run = func(ctx context.Context, sc *scenarios.Scenario, store string) (*runner.Outcome, error) {
			return runner.Run(ctx, sc, runner.Options{Store: store, TempDir: opt.TempDir, LinearizableTimeout: opt.LinearizableTimeout})
		}
	}
	r.Reruns = opt.Reruns
	if r.Checker, err = targetChecker(r.OriginalResults, opt.Checker); err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp(opt.TempDir, "locktorture-shrink-")
	if err != nil {
		return nil, fmt.Errorf("shrink: scratch store: %w", err)
	}
	defer os.RemoveAll(scratch)
	// Owned, so that the next run removes it if this process is killed.
	if err := owner.Mark(scratch); err != nil {
		return nil, fmt.Errorf("shrink: scratch store: %w", err)
	}
	s := &search{r: r, opt: opt, scratch: scratch, start: time.Now(), cache: map[string]bool{}}
	base := *r.Original
	base.Nemesis = scenarios.Nemesis{}
	base.Expect = scenarios.Expect{}
	base.Checkers = []string{r.Checker}
	s.base = &base
	err = s.run(ctx)
	r.Candidates, r.Runs, r.Elapsed = s.tried, s.runs, time.Since(s.start)
	if s.best != nil {
		r.Shrunk = s.final(s.best)
		r.Kept = slices.Clone(s.best.idx)
	}
	return r, err
}

// candidate is one scenario the search tries: which recorded faults
// (idx, into Result.Faults) as which steps, on how many clients and
// keys, for how long.
type candidate struct {
	idx      []int
	steps    []scenarios.Step
	clients  int
	keys     int
	duration time.Duration
}

func (c *candidate) clone() *candidate {
	d := *c
	d.idx = slices.Clone(c.idx)
	d.steps = slices.Clone(c.steps)
	return &d
}

func (c *candidate) shape() Shape {
	return Shape{Faults: len(c.steps), Clients: c.clients, Keys: c.keys, Duration: c.duration}
}

// lastEnd is when the latest-ending step ends (its start and length).
func (c *candidate) lastEnd() time.Duration {
	var m time.Duration
	for _, st := range c.steps {
		m = max(m, st.At.D()+st.For.D())
	}
	return m
}

// lastAt is the latest step's start.
func (c *candidate) lastAt() time.Duration {
	var m time.Duration
	for _, st := range c.steps {
		m = max(m, st.At.D())
	}
	return m
}

// search is one shrink in progress.
type search struct {
	r       *Result
	opt     Options
	base    *scenarios.Scenario
	scratch string
	start   time.Time
	phase   string
	cache   map[string]bool
	tried   int
	runs    int
	best    *candidate
}

// scenario is the candidate as a scenario run with seed.
func (s *search) scenario(c *candidate, seed int64) *scenarios.Scenario {
	sc := *s.base
	sc.Clients, sc.Keys, sc.Duration, sc.Seed = c.clients, c.keys, scenarios.Duration(c.duration), seed
	sc.Nemesis = scenarios.Nemesis{Script: slices.Clone(c.steps)}
	return &sc
}

// final is the shrunk scenario as written to shrunk.yaml.
func (s *search) final(c *candidate) *scenarios.Scenario {
	o := s.r.Original
	sc := s.scenario(c, o.Seed)
	sc.Name = o.Name + "-shrunk"
	sc.Backends, sc.Suits = []string{o.Backend}, nil
	sc.Checkers = slices.Clone(o.Checkers)
	sc.Expect = scenarios.Expect{Expectation: scenarios.Expectation{Valid: checker.Invalid.String(), Checkers: map[string]string{s.r.Checker: checker.Invalid.String()}}}
	sc.Description = fmt.Sprintf("Shrunk by locktorture shrink from a run of %s on %s (seed %d): %d of its %d faults, %d of %d clients, %d of %d keys, %s of %s; %s failed on each of %d re-runs.",
		o.Name, o.Backend, o.Seed, len(c.steps), len(s.r.Faults), c.clients, o.Clients, c.keys, o.Keys, c.duration, o.Duration, s.r.Checker, s.r.Reruns)
	return sc
}

// run is the search, phase by phase; each phase starts from the best
// candidate so far.
func (s *search) run(ctx context.Context) error {
	o := s.r.Original
	full := &candidate{clients: o.Clients, keys: o.Keys, duration: o.Duration.D()}
	for i, rec := range s.r.Faults {
		full.idx = append(full.idx, i)
		full.steps = append(full.steps, rec.Step)
	}
	if err := s.reproduce(ctx, full); err != nil {
		return err
	}
	phases := []struct {
		name string
		f    func(context.Context) error
	}{
		{"anchor", s.anchorAll},
		{"faults", s.faults},
		{"anchor", s.anchor},
		{"time", s.shift},
		{"keys", s.keys},
		{"clients", s.clients},
		{"time", s.duration},
		{"fault-lengths", s.lengths},
		{"time", s.duration},
		{"confirm", s.confirm},
	}
	for _, p := range phases {
		s.phase = p.name
		if err := p.f(ctx); err != nil {
			return err
		}
	}
	return nil
}

// reproduce finds the first failing candidate: the faults that started
// before the failure was first seen, in a run cut shortly after it; else
// the same cut at a later sighting (up to three more, spread over the
// run); else every fault, for the original length.
func (s *search) reproduce(ctx context.Context, full *candidate) error {
	s.phase = "reproduce"
	for _, w := range cutPoints(witnesses(s.r.OriginalResults, s.r.Checker)) {
		cut := &candidate{clients: full.clients, keys: full.keys}
		for i, rec := range s.r.Faults {
			if rec.Start < w {
				cut.idx = append(cut.idx, i)
				cut.steps = append(cut.steps, rec.Step)
			}
		}
		cut.duration = min(full.duration, ceilGrid(time.Duration(w)+afterFaults))
		if len(cut.steps) > 0 && cut.duration < full.duration {
			ok, err := s.test(ctx, cut)
			if err != nil || ok {
				return err
			}
		}
	}
	ok, err := s.test(ctx, full)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: the run's %d faults, scripted, did not make %s fail on each of %d runs (see %s)", ErrNotReproduced, len(full.steps), s.r.Checker, s.r.Reruns, FileLog)
	}
	return nil
}

// witnesses are the times (ns, sorted, distinct) at which the run showed
// the checker's failure; none when it showed only at the end (a lost
// update found by the final read).
func witnesses(res *checker.Results, name string) []int64 {
	var out []int64
	c := res.Checkers
	switch name {
	case checker.NameMutex, checker.NameLinearizable:
		if c.Mutex != nil {
			for _, v := range c.Mutex.Violations {
				out = append(out, v.Start)
			}
		}
	case checker.NameFencing:
		if c.Fencing != nil {
			for _, v := range c.Fencing.Violations {
				out = append(out, v.Time)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// cutPoints picks where to cut the run: the first sighting, then up to
// three later ones spread over the rest.
func cutPoints(ws []int64) []int64 {
	if len(ws) == 0 {
		return nil
	}
	out := []int64{ws[0]}
	for _, q := range []int{1, 2, 3} {
		w := ws[(len(ws)-1)*q/3]
		if w > out[len(out)-1] {
			out = append(out, w)
		}
	}
	return out
}

// faults drops the faults that do not matter (ddmin over the steps). A
// subset keeps the same time after its last fault as the best so far.
func (s *search) faults(ctx context.Context) error {
	cur := s.best
	pos := make([]int, len(cur.steps))
	for i := range pos {
		pos[i] = i
	}
	// Each subset runs as long after its last fault ends as the run did,
	// and no less than afterFaults: a run whose faults go on to its end
	// leaves no time after them, and a subset of its early faults would
	// end before they could show (a paused holder wakes and writes).
	tail := max(cur.duration-cur.lastEnd(), afterFaults)
	_, err := ddmin(ctx, pos, func(ctx context.Context, keep []int) (bool, error) {
		c := cur.clone()
		c.idx, c.steps = nil, nil
		for _, p := range keep {
			c.idx = append(c.idx, cur.idx[p])
			c.steps = append(c.steps, cur.steps[p])
		}
		c.duration = min(cur.duration, ceilGrid(c.lastEnd()+tail))
		return s.test(ctx, c)
	})
	return err
}

// anchorAll tries every timed step on the next acquire at once, before
// delta debugging: a fault that strikes at a bare instant fails only
// some runs (a server clock jump expires a lock only when one is held),
// and ddmin's answers are only as steady as the runs behind them.
func (s *search) anchorAll(ctx context.Context) error {
	c := s.best.clone()
	changed := false
	for i := range c.steps {
		if c.steps[i].On == "" {
			c.steps[i].On, changed = history.Acquire, true
		}
	}
	if !changed {
		return nil
	}
	_, err := s.test(ctx, c)
	return err
}

// anchor tries each timed step on an event instead: right after the next
// acquire (its process's, or any client's) at or after its time. A fault
// whose effect depends on the instant it strikes (a server clock jump
// that expires a held lock, a kill that loses one) then strikes while a
// lock is held, every run, rather than when one happens to be.
func (s *search) anchor(ctx context.Context) error {
	for i := range s.best.steps {
		if s.best.steps[i].On != "" {
			continue
		}
		c := s.best.clone()
		c.steps[i].On = history.Acquire
		if _, err := s.test(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// shift moves the faults toward the start of the run (the first at lead,
// else half way there), shortening the run by as much: fewer keys and clients are tried on the
// short run, before the run itself is cut.
func (s *search) shift(ctx context.Context) error {
	cur := s.best
	first := cur.steps[0].At.D()
	for _, st := range cur.steps {
		first = min(first, st.At.D())
	}
	// All the way, else half way.
	for _, shift := range []time.Duration{(first - lead) / grid * grid, (first - lead) / 2 / grid * grid} {
		if shift <= 0 {
			continue
		}
		c := cur.clone()
		for i := range c.steps {
			c.steps[i].At = scenarios.Duration(c.steps[i].At.D() - shift)
		}
		c.duration = ceilGrid(cur.duration - shift)
		if ok, err := s.test(ctx, c); err != nil || ok {
			return err
		}
	}
	return nil
}

// duration shortens the run by bisection, on the grid, to no less than
// one grid step past the last fault's start.
func (s *search) duration(ctx context.Context) error {
	cur := s.best
	return s.bisect(ctx, ceilGrid(cur.lastAt()+time.Millisecond), cur.duration, func(d time.Duration) *candidate {
		c := s.best.clone()
		c.duration = d
		return c
	})
}

// bisect finds, on the grid, the smallest value in [lo, hi] for which
// make(value) fails, hi known to fail: lo first, then halving.
func (s *search) bisect(ctx context.Context, lo, hi time.Duration, make func(time.Duration) *candidate) error {
	lo = ceilGrid(lo)
	if lo >= hi {
		return nil
	}
	ok, err := s.test(ctx, make(lo))
	if err != nil || ok {
		return err
	}
	for hi-lo > grid {
		mid := ceilGrid(lo + (hi-lo)/2)
		if mid >= hi {
			break
		}
		ok, err := s.test(ctx, make(mid))
		if err != nil {
			return err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	return nil
}

// clients tries fewer clients, fewest first (at least 2: one client
// alone cannot overlap anyone), renumbering the processes the faults
// name when they would not exist.
func (s *search) clients(ctx context.Context) error {
	cur := s.best
	for n := 2; n < cur.clients; n++ {
		c, ok := withClients(cur, n)
		if !ok {
			continue
		}
		good, err := s.test(ctx, c)
		if err != nil || good {
			return err
		}
	}
	return nil
}

// keys tries fewer keys, fewest first.
func (s *search) keys(ctx context.Context) error {
	cur := s.best
	for n := 1; n < cur.keys; n++ {
		c := cur.clone()
		c.keys = n
		good, err := s.test(ctx, c)
		if err != nil || good {
			return err
		}
	}
	return nil
}

// lengths shortens each fault in turn by bisection (to 0 for a fault that
// may be instant, else one grid step).
func (s *search) lengths(ctx context.Context) error {
	for i := range s.best.steps {
		lo := grid
		if allowsZero(s.best.steps[i].Fault) {
			lo = 0
		}
		err := s.bisect(ctx, lo, s.best.steps[i].For.D(), func(d time.Duration) *candidate {
			c := s.best.clone()
			c.steps[i].For = scenarios.Duration(d)
			return c
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// confirmRuns is how many more runs, with shrunk.yaml's own seed, the
// smallest candidate must fail before it is written.
const confirmRuns = 5

// confirm runs the best candidate confirmRuns more times with the seed
// shrunk.yaml will carry (the run's): the search's last steps sit at the
// edge of failing, where one run more may not fail. If one does not, the
// run gets one grid step longer (up to four times), and that must fail
// its Reruns runs and the confirming ones.
func (s *search) confirm(ctx context.Context) error {
	c := s.best
	seed := s.r.Original.Seed
	seeds := make([]int64, confirmRuns)
	for i := range seeds {
		seeds[i] = seed
	}
	for range 4 {
		ok, err := s.test(ctx, c)
		if err != nil {
			return err
		}
		if ok {
			s.tried++
			more, why, _, _, err := s.runAll(ctx, c, seeds)
			if err != nil {
				return err
			}
			if more {
				s.logf("candidate %d (confirm): %s: %s failed %d more runs with seed %d", s.tried, c.shape(), s.r.Checker, confirmRuns, seed)
				s.best = c
				return nil
			}
			s.logf("candidate %d (confirm): %s: not confirmed: %s", s.tried, c.shape(), why)
		}
		c = c.clone()
		c.duration += grid
	}
	s.logf("the smallest candidate did not fail on every confirming run; kept as found")
	return nil
}

// test runs a candidate Reruns times (stopping at the first run that does
// not fail the checker) and keeps it as the best when every run failed.
// A candidate is tried once: the answer is remembered.
func (s *search) test(ctx context.Context, c *candidate) (bool, error) {
	seed := s.r.Original.Seed
	key, err := s.scenario(c, seed).Marshal()
	if err != nil {
		return false, err
	}
	if ok, seen := s.cache[string(key)]; seen {
		return ok, nil
	}
	s.tried++
	seeds := make([]int64, s.r.Reruns)
	for j := range seeds {
		seeds[j] = seed + int64(j)
	}
	ok, why, ops, res, err := s.runAll(ctx, c, seeds)
	if err != nil {
		return false, err
	}
	s.cache[string(key)] = ok
	verdict := "dropped: " + why
	if ok {
		verdict = fmt.Sprintf("kept: %s failed %d of %d", s.r.Checker, s.r.Reruns, s.r.Reruns)
		s.best = c
		s.r.ShrunkOps, s.r.ShrunkResults = ops, res
	}
	s.logf("candidate %d (%s): %s: %s", s.tried, s.phase, c.shape(), verdict)
	for _, st := range c.steps {
		s.logf("    %s", stepString(st))
	}
	return ok, nil
}

// runAll runs the candidate once with each seed, stopping at the first
// run that does not fail. It returns the first run's history and results
// when every run failed, else why not.
func (s *search) runAll(ctx context.Context, c *candidate, seeds []int64) (ok bool, why string, ops []history.Op, res *checker.Results, err error) {
	for j, seed := range seeds {
		sc := s.scenario(c, seed)
		if err := sc.Validate(); err != nil {
			return false, "not a valid scenario: " + err.Error(), nil, nil, nil
		}
		out, err := s.opt.run(ctx, sc, s.scratch)
		s.runs++
		s.report()
		if ctx.Err() != nil || errors.Is(err, runner.ErrInterrupted) {
			return false, "", nil, nil, fmt.Errorf("%w: shrink stopped after %d candidates", runner.ErrInterrupted, s.tried)
		}
		if out == nil {
			_ = os.RemoveAll(filepath.Join(s.scratch, sc.Name))
			return false, fmt.Sprintf("run %d of %d: %v", j+1, len(seeds), err), nil, nil, nil
		}
		v := out.Results.Checkers.Verdicts()[s.r.Checker]
		if out.Results.Valid != checker.Invalid || v != checker.Invalid {
			_ = os.RemoveAll(filepath.Join(s.scratch, sc.Name))
			return false, fmt.Sprintf("run %d of %d: %s %s", j+1, len(seeds), s.r.Checker, v), nil, nil, nil
		}
		if j == 0 {
			ops, err = history.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
			if err != nil {
				return false, "", nil, nil, fmt.Errorf("shrink: %w", err)
			}
			res = out.Results
		}
		_ = os.RemoveAll(filepath.Join(s.scratch, sc.Name))
	}
	return true, "", ops, res, nil
}

func (s *search) report() {
	if s.opt.Progress == nil {
		return
	}
	p := Progress{Phase: s.phase, Candidates: s.tried, Runs: s.runs, Elapsed: time.Since(s.start)}
	if s.best != nil {
		b := s.best.shape()
		p.Best = &b
	}
	s.opt.Progress(p)
}

func (s *search) logf(format string, a ...any) {
	if s.opt.Log != nil {
		fmt.Fprintf(s.opt.Log, format+"\n", a...)
	}
}

// ceilGrid rounds d up to the grid.
func ceilGrid(d time.Duration) time.Duration {
	return (d + grid - 1) / grid * grid
}

// StepLine describes a script step as run.log's plan does: "pause process
// 0 on read after 2.1s for 2.3s".
func StepLine(st scenarios.Step) string { return stepString(st) }

// StepLines describes the shrunk scenario's steps.
func (r *Result) StepLines() []string {
	if r.Shrunk == nil {
		return nil
	}
	var out []string
	for _, st := range r.Shrunk.Nemesis.Script {
		out = append(out, stepString(st))
	}
	return out
}

// IsKept reports whether the shrunk scenario kept recorded fault i.
func (r *Result) IsKept(i int) bool { return slices.Contains(r.Kept, i) }
