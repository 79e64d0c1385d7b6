package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/locktorture/locktorture/internal/shell"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/matrix"
	"github.com/locktorture/locktorture/reports"
	"github.com/locktorture/locktorture/scenarios"
)

// MatrixOptions say which cells a matrix runs and how.
type MatrixOptions struct {
	// Scenarios are built-in scenario names or scenario file paths (ending
	// in .yaml or .yml); empty means every built-in scenario.
	Scenarios []string
	// Backends narrows the backends; empty means every registered one.
	// Each scenario runs with the backends its `backends:` list names
	// (all, when the list is empty) that are also here.
	Backends []string
	// Seeds is the number of seeds per scenario/backend pair: the
	// scenario's seed, seed+1, ... (zero means 1).
	Seeds int
	// Store is the store's root directory ("store"); runs go where run
	// puts them, the matrix to store/matrix/<timestamp>/.
	Store string
	// Shard and Shards run only the shard-th of Shards shares of the plan
	// (from 1); zero Shards runs the whole plan.
	Shard, Shards int
	// Overrides apply to every cell (Backend and Seed are set per cell).
	Overrides scenarios.Overrides
	// RunArgs are the overrides as command-line flags, added to each
	// cell's repeat command.
	RunArgs []string
	// Command repeats the matrix, for its report.
	Command string
	// TempDir holds the servers' data directories.
	TempDir string
	// LinearizableTimeout bounds porcupine in each run.
	LinearizableTimeout time.Duration
	// Log receives the runs' log lines; nil for none.
	Log io.Writer
	// Observe sees every op of the followed cell (see Options.Observe): a
	// live count follows one run at a time. A cell is followed, from its
	// start to its end, when no other is as it starts (CellEvent.Followed);
	// one by one, every cell is.
	Observe func(history.Op)
	// OnCell is called before each cell starts and after it ends (never
	// twice at once, even with cells side by side).
	OnCell func(CellEvent)
	// Parallel is how many cells run at once (zero means 1). Each cell
	// starts its own servers on free ports; results keep the plan's order.
	Parallel int
	// OneSeed names scenarios run with their own seed only (see
	// matrix.PlanOptions.OneSeed).
	OneSeed []string
	// Durations are the run times of the named scenarios (see
	// matrix.PlanOptions.Durations).
	Durations map[string]time.Duration
	// Versions run every cell once per version set (see
	// matrix.PlanOptions.Versions); a set that cannot run a cell (no
	// Valkey in its image) skips it, with the reason (refusal).
	Versions []matrix.Version
	// Prestart starts a cell's servers while the cell before it in its
	// lane winds down (its clients done), when their estimated start-up
	// is at least matrix.PrestartMin (locktorture matrix/compare --prestart, on
	// by default there): each run's time, faults and history are as
	// without; its run.log says so.
	Prestart bool
	// Compare makes the matrix a backend comparison (locktorture compare):
	// fenced cells beside the plain ones where a scenario states a fenced
	// expectation, each cell's recovery after the faults measured, and
	// the comparison table in the report.
	Compare bool
}

// CellEvent tells OnCell about a cell starting (Done false) or ending.
type CellEvent struct {
	// Index is the cell's position in this shard's share, from 0, of Total.
	Index, Total int
	// Key names the cell.
	Key matrix.CellKey
	// Duration is how long the cell's clients run.
	Duration time.Duration
	// LockFree is set for a backend that takes no lock.
	LockFree bool
	// Followed is set when MatrixOptions.Observe sees this cell's ops
	// (on its start and on its end alike).
	Followed bool
	// Done is set once the cell has ended; Cell is then its result and
	// Dir its run directory (empty when none is left).
	Done bool
	Cell matrix.Cell
	Dir  string
}

// MatrixOutcome is what a matrix or a merge produced.
type MatrixOutcome struct {
	// Matrix is the matrix's results.json.
	Matrix *matrix.Matrix
	// Dir is store/matrix/<timestamp>/.
	Dir string
	// Notes are a merge's remarks: the paths given that held no matrix,
	// taken as shards that never came.
	Notes []string
}

// planMatrix plans the whole matrix (see matrix.Plan) and checks that
// its shards, if any, each get a cell; a bad plan is bad input.
func planMatrix(opt MatrixOptions) (*matrix.Matrix, []matrix.Planned, error) {
	if opt.Shards > matrix.MaxShards {
		return nil, nil, fmt.Errorf("%w: shard %d of %d: at most %d shards", ErrBadInput, opt.Shard, opt.Shards, matrix.MaxShards)
	}
	m, cells, err := matrix.Plan(matrix.PlanOptions{Scenarios: opt.Scenarios, Backends: opt.Backends, Seeds: opt.Seeds, Overrides: opt.Overrides, Command: opt.Command, Fenced: opt.Compare, OneSeed: opt.OneSeed, Durations: opt.Durations,
		Versions: opt.Versions, Refuse: func(_ matrix.Version, sc *scenarios.Scenario) string { return refusal(context.Background(), sc) }})
	if err == nil {
		err = matrix.CheckShards(cells, opt.Shard, opt.Shards)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	return m, cells, nil
}

// ParseShard reads "i/n" (1 <= i <= n); a bad one is bad input.
func ParseShard(s string) (i, n int, err error) {
	i, n, err = matrix.ParseShard(s)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	return i, n, nil
}

// PlanMatrix returns the cells the matrix would run (this shard's share)
// and the pairs skipped, without running anything.
func PlanMatrix(opt MatrixOptions) (share []matrix.CellKey, skipped []matrix.Skipped, err error) {
	m, cells, err := planMatrix(opt)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range matrix.Share(cells, opt.Shard, opt.Shards) {
		share = append(share, c.Key)
	}
	return share, m.Skipped, nil
}

// PlanShards returns every shard's share of the matrix (one share when
// opt.Shards is 0 or 1), as matrix.Shares splits it by estimated time,
// and the pairs skipped, without running anything. More shards than
// cells (or than matrix.MaxShards) are bad input.
func PlanShards(opt MatrixOptions) (shares [][]matrix.Planned, skipped []matrix.Skipped, err error) {
	m, cells, err := planMatrix(opt)
	if err != nil {
		return nil, nil, err
	}
	return matrix.Shares(cells, max(opt.Shards, 1)), m.Skipped, nil
}

// RunMatrix runs the matrix's cells, opt.Parallel at a time (every run
// starts its own servers on free ports), judges each
// against its scenario's expectation for the backend, and writes
// store/matrix/<timestamp>/: results.json after every cell, and the whole
// report at the end. A run that fails with a harness error becomes an
// "error" cell and the matrix goes on. When ctx is cancelled the matrix
// stops, writes what it has, and returns its outcome with an error
// wrapping ErrInterrupted.
func RunMatrix(ctx context.Context, opt MatrixOptions) (*MatrixOutcome, error) {
	r, err := newMatrixRun(opt)
	if err != nil {
		return nil, err
	}
	r.save()
	r.dispatch(ctx)
	return r.finish(ctx)
}

// matrixRun is one matrix under way: its plan, its directory, and the
// cells judged so far.
type matrixRun struct {
	opt   MatrixOptions
	m     *matrix.Matrix
	share []matrix.Planned
	dir   string
	began time.Time

	mu       sync.Mutex // guards judged, done, followed, runErr, m and OnCell calls
	judged   []matrix.Cell
	done     []bool
	followed int // the cell whose ops Observe sees, or -1
	runErr   error
}

// newMatrixRun plans the matrix (this shard's share) and makes its
// directory.
func newMatrixRun(opt MatrixOptions) (*matrixRun, error) {
	if opt.Shards > 0 && (opt.Shard < 1 || opt.Shard > opt.Shards) {
		return nil, fmt.Errorf("%w: shard %d of %d", ErrBadInput, opt.Shard, opt.Shards)
	}
	m, cells, err := planMatrix(opt)
	if err != nil {
		return nil, err
	}
	share := matrix.Share(cells, opt.Shard, opt.Shards)
	if opt.Shards > 1 {
		m.Shard = fmt.Sprintf("%d/%d", opt.Shard, opt.Shards)
	}
	m.Compare = opt.Compare
	if opt.Store == "" {
		opt.Store = "store"
	}
	dir, err := newRunDir(opt.Store, "matrix", "")
	if err != nil {
		return nil, err
	}
	m.Started = filepath.Base(dir)
	return &matrixRun{opt: opt, m: m, share: share, dir: dir, began: time.Now(),
		judged: make([]matrix.Cell, len(share)), done: make([]bool, len(share)), followed: -1}, nil
}

// save writes results.json as it stands (the caller holds mu, or no
// cell runs).
func (r *matrixRun) save() {
	r.m.Seconds = roundSeconds(time.Since(r.began))
	r.m.Finish()
	_ = matrix.Write(r.dir, r.m)
}

// collect lists the cells finished so far, in plan order: results.json
// and the report list them the same whether cells ran one by one or side
// by side.
func (r *matrixRun) collect() {
	r.m.Cells = r.m.Cells[:0]
	for i := range r.judged {
		if r.done[i] {
			r.m.Cells = append(r.m.Cells, r.judged[i])
		}
	}
}

// runOptions are the run options of one cell.
func (r *matrixRun) runOptions(c matrix.Planned, followed bool) Options {
	o := Options{
		Store: r.opt.Store, Command: c.Command(r.opt.RunArgs), Log: r.opt.Log, TempDir: r.opt.TempDir,
		LinearizableTimeout: r.opt.LinearizableTimeout,
	}
	if followed {
		o.Observe = r.opt.Observe
	}
	return o
}

// runCell runs the i-th cell of the share and records its judgment;
// ready, when not nil, is the cell's run prepared ahead, and h tells the
// cell's lane how far the run got.
func (r *matrixRun) runCell(ctx context.Context, i int, ready *ahead, h laneHooks) {
	c := r.share[i]
	ev := CellEvent{Index: i, Total: len(r.share), Key: c.Key, Duration: c.Scenario.Duration.D(), LockFree: c.LockFree}
	r.mu.Lock()
	if r.followed < 0 {
		r.followed, ev.Followed = i, true
	}
	if r.opt.OnCell != nil {
		r.opt.OnCell(ev)
	}
	r.mu.Unlock()
	start := time.Now()
	var out *Outcome
	var err error
	if opts := r.runOptions(c, ev.Followed); ready != nil {
		out, err = ready.run(ctx, opts.Observe, h)
	} else {
		out, err = runThen(ctx, c.Scenario, opts, h)
	}
	var cell matrix.Cell
	if err == nil {
		cell = r.judge(c, out)
		ev.Dir = out.Dir
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ev.Followed {
		r.followed = -1
	}
	switch {
	case err != nil && (errors.Is(err, ErrInterrupted) || ctx.Err() != nil):
		r.m.Interrupted = true
		if r.runErr == nil {
			r.runErr = err
		}
		return
	case err != nil && errors.Is(err, errNotServed) && c.Exec != "":
		// A program of the user's that cannot serve the family (a
		// client's clock, no clock ability): not run, with the reason,
		// as a family says of a built-in it cannot apply to.
		r.notServed(c.Key, err)
		if r.opt.OnCell != nil {
			ev.Done, ev.Cell = true, matrix.Cell{CellKey: c.Key, Verdict: "not run", Expected: c.Expect.Valid, AsExpected: true, Why: err.Error()}
			r.opt.OnCell(ev)
		}
		return
	case err != nil:
		cell = matrix.ErrorCell(c.Key, c.Expect.Valid, c.Expect.Checkers, err)
	}
	if cell.Expected == scenarios.Either {
		cell.ExpectedWhy = c.Expect.Why
	}
	cell.Seconds = roundSeconds(time.Since(start))
	r.judged[i], r.done[i] = cell, true
	r.collect()
	r.save()
	if r.opt.OnCell != nil {
		ev.Done, ev.Cell = true, cell
		r.opt.OnCell(ev)
	}
}

// notServed takes a planned cell the client program could not serve out
// of the plan, and says why among the pairs not run (the caller holds mu).
func (r *matrixRun) notServed(key matrix.CellKey, err error) {
	r.m.Planned = slices.DeleteFunc(r.m.Planned, func(k matrix.CellKey) bool { return k == key })
	why := err.Error()
	if _, after, ok := strings.Cut(why, errNotServed.Error()+": "); ok {
		why = after
	}
	said := slices.ContainsFunc(r.m.Skipped, func(s matrix.Skipped) bool {
		return s.Scenario == key.Scenario && s.Backend == key.Backend // another seed said it
	})
	if !said {
		r.m.Skipped = append(r.m.Skipped, matrix.Skipped{Scenario: key.Scenario, Backend: key.Backend, Version: key.Version, Why: "not run: " + why})
	}
	r.save()
}

// judge makes the cell of a finished run; a comparison's cell also
// measures the recovery after the faults from the run's history.
func (r *matrixRun) judge(c matrix.Planned, out *Outcome) matrix.Cell {
	rel, rerr := filepath.Rel(r.dir, out.Dir)
	if rerr != nil {
		rel = out.Dir
	}
	cell := matrix.NewCell(c.Key, out.Results, c.Expect.Valid, c.Expect.Checkers, rel)
	cell.Headline = reports.Headline(out.Results)
	if srv := out.Results.Servers; srv != nil && len(srv.Versions) > 0 {
		cell.ServerVersions = srv.Versions
	}
	if out.Results.Valid == checker.Invalid && c.Scenario.Nemesis.Random != nil {
		cell.Shrink = shell.Join([]string{"locktorture", "shrink", out.Dir})
	}
	if r.opt.Compare {
		if ops, err := history.ReadFile(filepath.Join(out.Dir, reports.FileHistory)); err == nil {
			if rec, ok := matrix.RecoveryOf(ops); ok {
				cell.Recovery = &rec
			}
		}
	}
	return cell
}

// dispatch runs the share's cells in opt.Parallel lanes, longest first,
// until all ran or ctx is cancelled.
func (r *matrixRun) dispatch(ctx context.Context) {
	parallel := max(r.opt.Parallel, 1)
	// Longest first (by each cell's estimate: matrix.Planned.Cost), so
	// that side-by-side cells finish together rather than one long cell
	// running alone at the end; the plan's estimate deals them the same
	// way (matrix.Wall).
	order := make([]int, len(r.share))
	for i := range order {
		order[i] = i
	}
	if parallel > 1 {
		order = matrix.LongestFirst(r.share)
	}
	q := &cellQueue{order: order}
	var wg sync.WaitGroup
	for range min(parallel, len(r.share)) {
		wg.Go(func() { r.lane(ctx, q) })
	}
	wg.Wait()
}

// finish writes the report, and store/matrix/latest when the matrix ran
// every cell (an interrupted one leaves it where it was, as a run leaves
// store/latest), and says whether the matrix was interrupted.
func (r *matrixRun) finish(ctx context.Context) (*MatrixOutcome, error) {
	if ctx.Err() != nil {
		r.m.Interrupted = true
	}
	r.collect()
	r.m.Seconds = roundSeconds(time.Since(r.began))
	werr := reports.WriteMatrix(context.WithoutCancel(ctx), r.dir, r.m)
	if !r.m.Interrupted {
		if err := linkLatest(filepath.Join(r.opt.Store, "matrix"), r.dir); err != nil && werr == nil {
			werr = err
		}
	}
	out := &MatrixOutcome{Matrix: r.m, Dir: r.dir}
	if r.m.Interrupted {
		runErr := r.runErr
		if runErr == nil {
			runErr = ctx.Err()
		}
		return out, fmt.Errorf("%w: the matrix stopped after %d of %d cells; what ran is in %s: %w", ErrInterrupted, len(r.m.Cells), len(r.share), r.dir, runErr)
	}
	if werr != nil {
		return out, fmt.Errorf("matrix report: %w", werr)
	}
	return out, nil
}

func roundSeconds(d time.Duration) float64 {
	return math.Round(d.Seconds()*1000) / 1000
}

// errNoMatrix is wrapped when a path given to merge holds no matrix at
// all (no results.json, no store/matrix/ with one): a shard that never
// came, when another path holds one.
var errNoMatrix = errors.New("no matrix")

// resolveMatrixDir finds the matrix a path names: a matrix directory, its
// results.json, or a store whose newest complete matrix is taken (an
// interrupted one only when named, or when the store holds no complete
// one: a shard cut short by its CI job's time limit). A results.json that
// is there but is no matrix's (garbage, cut short, empty, a run's, not a
// regular file) is bad input naming the file — never taken as a shard
// that never came, nor passed over for an older matrix; a path holding no
// results.json at all wraps errNoMatrix.
func resolveMatrixDir(p string) (string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	if !st.IsDir() {
		if _, err := matrix.Read(p); err != nil {
			return "", fmt.Errorf("%w: %w", ErrBadInput, err)
		}
		return filepath.Dir(p), nil
	}
	switch _, err := matrix.Read(p); {
	case err == nil:
		return p, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	root := filepath.Join(p, "matrix")
	ents, err := os.ReadDir(root)
	if err != nil {
		return "", fmt.Errorf("%w: %w: %s is neither a matrix directory nor a store holding one", ErrBadInput, errNoMatrix, p)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() && e.Name() != "latest" {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	interrupted := ""
	for i := len(names) - 1; i >= 0; i-- {
		d := filepath.Join(root, names[i])
		m, err := matrix.Read(d)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // no matrix there
		case err != nil:
			// It may be the newest complete matrix: none older is
			// taken in its place.
			return "", fmt.Errorf("%w: %w", ErrBadInput, err)
		case !m.Interrupted:
			return d, nil
		case interrupted == "":
			interrupted = d
		}
	}
	if interrupted != "" {
		return interrupted, nil
	}
	return "", fmt.Errorf("%w: %w in %s", ErrBadInput, errNoMatrix, root)
}

// MergeMatrix joins the shards of one matrix (each path a matrix
// directory, or a store whose newest matrix is taken) into one report in
// store/matrix/<timestamp>/, as if one machine had run them all: the same
// grid, junit.xml and plots, each cell linking to its run where the shard
// left it, each judged again against its claim (matrix.Merge). Shards of
// different plans, a cell run twice, a cell no plan has, a verdict that is
// none, or a results.json that is no matrix's are bad input, and nothing
// is written; a planned cell no shard ran is "missing". A directory that
// holds no matrix at all (a CI shard that failed before its matrix began)
// is a shard that never came, said in the outcome's Notes, as long as
// another holds one.
func MergeMatrix(ctx context.Context, paths []string, store, command string) (*MatrixOutcome, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: merge needs the shards' matrix directories", ErrBadInput)
	}
	var dirs, notes []string
	var firstErr error
	for _, p := range paths {
		d, err := resolveMatrixDir(p)
		if err != nil {
			if st, serr := os.Stat(p); !errors.Is(err, errNoMatrix) || serr != nil || !st.IsDir() {
				return nil, err
			}
			notes = append(notes, fmt.Sprintf("%s holds no matrix: taken as a shard that never came", p))
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		dirs = append(dirs, d)
	}
	if len(dirs) == 0 {
		return nil, firstErr
	}
	if store == "" {
		store = "store"
	}
	if st, err := os.Stat(store); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("%w: --store %s is a file, not a directory", ErrBadInput, store)
	}
	// Merged first, written after: a refused merge leaves nothing. The
	// cells' links are made relative to a sibling of the directory to
	// come, which gives the same relative paths.
	m, err := matrix.Merge(dirs, filepath.Join(store, "matrix", "merging"))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	dir, err := newRunDir(store, "matrix", "")
	if err != nil {
		return nil, err
	}
	m.Started, m.Command = filepath.Base(dir), command
	out := &MatrixOutcome{Matrix: m, Dir: dir, Notes: notes}
	if err := reports.WriteMatrix(ctx, dir, m); err != nil {
		return out, fmt.Errorf("matrix report: %w", err)
	}
	if err := linkLatest(filepath.Join(store, "matrix"), dir); err != nil {
		return out, fmt.Errorf("matrix: %w", err)
	}
	return out, nil
}

// Report draws every report file of a stored run or matrix again from what
// the store holds (history.jsonl, results.json, run.json or scenario.yaml;
// a matrix's results.json), with no servers. For a matrix, every run it
// links to is redrawn too. The files depend only on those inputs, so
// drawing twice gives the same bytes. It returns the directory and whether
// it was a matrix; warn receives non-fatal remarks.
func Report(ctx context.Context, path string, warn func(string)) (dir string, isMatrix bool, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", false, fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	dir = path
	if !st.IsDir() {
		dir = filepath.Dir(path)
	}
	if matrix.IsDir(dir) {
		m, err := matrix.Read(dir)
		if err != nil {
			return dir, true, fmt.Errorf("%w: %w", ErrBadInput, err)
		}
		for _, c := range m.Cells {
			if c.Dir == "" {
				continue
			}
			rd := filepath.Join(dir, filepath.FromSlash(c.Dir))
			if _, err := os.Stat(filepath.Join(rd, reports.FileHistory)); err != nil {
				warn(fmt.Sprintf("%s: run %s not found, its report not redrawn", c.CellKey, rd))
				continue
			}
			if err := reportRun(ctx, rd, warn); err != nil {
				warn(fmt.Sprintf("%s: %v", c.CellKey, err))
			}
		}
		if err := reports.WriteMatrix(ctx, dir, m); err != nil {
			return dir, true, err
		}
		return dir, true, nil
	}
	if _, err := os.Stat(filepath.Join(dir, reports.FileHistory)); err != nil {
		return dir, false, fmt.Errorf("%w: %s holds neither a run (history.jsonl) nor a matrix (results.json of kind matrix)", ErrBadInput, dir)
	}
	return dir, false, reportRun(ctx, dir, warn)
}

// reportRun redraws one run's report from its store directory. Without a
// results.json it analyzes the history first.
func reportRun(ctx context.Context, dir string, warn func(string)) error {
	if _, err := os.Stat(filepath.Join(dir, reports.FileResults)); err != nil {
		warn(fmt.Sprintf("%s has no results.json: checking its history first", dir))
		_, err := Analyze(ctx, dir, Options{}, warn)
		return err
	}
	hpath := filepath.Join(dir, reports.FileHistory)
	fc, n, err := scanFile(ctx, hpath)
	if err != nil {
		return err
	}
	if fc.truncated != nil {
		warn(fmt.Sprintf("%v: drew the %d complete ops before it", fc.truncated, n))
	}
	res, err := reports.ReadResults(filepath.Join(dir, reports.FileResults))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	scanned := *res
	scanned.Ops = n
	ops, long, err := reportOps(ctx, hpath, &scanned, fc)
	if err != nil {
		return err
	}
	var sc *scenarios.Scenario
	if data, err := os.ReadFile(filepath.Join(dir, reports.FileScenario)); err == nil {
		sc, _ = scenarios.Parse(data, filepath.Join(dir, reports.FileScenario))
	}
	return writeRunReport(ctx, dir, ops, long, res, sc)
}

// writeRunReport draws a stored run's report with the RunInfo it was
// first drawn with (run.json), or, for a run stored without one, with what
// its scenario says.
func writeRunReport(ctx context.Context, dir string, ops []history.Op, long *longRun, res *checker.Results, sc *scenarios.Scenario) error {
	info, err := reports.ReadRunInfo(dir)
	if err != nil {
		info = fallbackInfo(dir, res, sc)
	}
	info.Summary = reports.Summary(res, 3)
	long.apply(&info)
	return reports.WriteRun(ctx, dir, ops, res, info)
}

// fallbackInfo describes a run stored without run.json.
func fallbackInfo(dir string, res *checker.Results, sc *scenarios.Scenario) reports.RunInfo {
	info := reports.RunInfo{Scenario: res.Scenario, Backend: res.Backend, Resource: res.Resource, Seed: res.Seed}
	if sc != nil {
		info = reports.RunInfo{
			Scenario: sc.Name, Description: strings.TrimSpace(sc.Description), Backend: sc.Backend, Resource: sc.Resource,
			Fencing: sc.Fencing, Seed: sc.Seed, Clients: sc.Clients, Keys: sc.Keys,
			Command:  shell.Join([]string{"locktorture", "run", "--scenario-file", filepath.Join(dir, reports.FileScenario)}),
			Expected: sc.Expected(sc.Backend).Valid, ExpectedCheckers: sc.Expected(sc.Backend).Checkers, Settings: settings(sc),
		}
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, l := range logs {
		if b := filepath.Base(l); b != reports.FileRunLog {
			info.Logs = append(info.Logs, b)
		}
	}
	return info
}
