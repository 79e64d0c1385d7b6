package locktest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/matrix"
	"github.com/locktorture/locktorture/reports"
	"github.com/locktorture/locktorture/runner"
	"github.com/locktorture/locktorture/scenarios"
)

// Comparison says which lock Compare puts in locktorture compare's table,
// beside which built-in rows, and what it claims. New, Kinds, Claims,
// Like, Servers and Images mean what they mean in a Suite.
type Comparison struct {
	// New builds one client's lock (required).
	New NewLock
	// Kinds are the kinds of server the lock uses (default redis).
	Kinds []string
	// Name is the lock's row in the table: letters, digits, '.', '_'
	// and '-', no built-in backend's name. Empty: the test's name, each
	// other character made '-' ("TestMyLock").
	Name string
	// Families are compare's fault families to run (pause, partition,
	// delay, ...: scenarios.Families, docs/compare.md); empty:
	// every one. The no-fault baseline always runs: it gives each row's
	// speed. A family the lock cannot take is not run, with the reason:
	// one that selects other servers or abilities (renew-partition and
	// renew-delay select locks that renew; failover-leader etcd or
	// ZooKeeper), and clock (a client process's clock is its own).
	Families []string
	// Beside names the built-in rows put beside the lock's. Nil: every
	// built-in backend (the backends registry's, the library rows
	// included) whose servers are all of the lock's Kinds; a non-nil
	// empty list: none.
	Beside []string
	// Seeds is how many seeds each family runs with: its scenario's seed,
	// seed+1, ... (default 1; LOCKTEST_SEEDS or -locktest.seeds wins).
	// The baseline runs one. Run's LOCKTEST_SEED does not apply: the
	// seeds are the families' own, as in locktorture compare, so the
	// lock's cells and the built-in rows' ran with the same ones.
	Seeds int
	// Claim is what the lock promises under every family (nil: nothing);
	// Claims, by scenario name ("pause", "failover-leader"), override it
	// for some; Like, when set, replaces both with the built-in
	// expectations of the closest backend ("redis-token"). With none of
	// the three the row states no claim, as a row of compare --exec:
	// every verdict counts as expected, and only a harness error fails.
	Claim  *Claim
	Claims map[string]Claim
	Like   string
	// Servers is where servers run when neither LOCKTEST_SERVERS nor
	// -locktest.servers says: local (the default), docker or a servers
	// file's path. Images name docker servers' images (LOCKTEST_IMAGES
	// wins).
	Servers string
	Images  map[string]string
	// Store is the store the comparison is written to, as locktorture
	// compare --store: its table in STORE/matrix/<timestamp>/, each run
	// under STORE/<scenario>/<backend>/. Empty: LOCKTEST_STORE, else a
	// temporary directory removed after a passing test unless
	// LOCKTEST_KEEP is set.
	Store string
	// Parallel is how many cells run at once, each on servers of its own
	// (default 2, as compare's --parallel; 1 on the servers of a servers
	// file, which the cells share).
	Parallel int
}

// CompareResult is where a comparison went and what it found. In a client
// process (the test binary re-executed to serve another Compare or Run
// call of the same test) it is empty: code between two such calls must
// not fail on it.
type CompareResult struct {
	// Dir is the comparison's directory: compare.html, compare.txt,
	// compare.png, results.json, junit.xml and index.html, as an unsharded
	// locktorture compare writes them.
	Dir string
	// Row is the lock's row's name.
	Row string
	// Matrix is the comparison's results.json.
	Matrix *matrix.Matrix
}

// compareParallel is how many cells a comparison runs at once unless told:
// locktorture compare's default.
const compareParallel = 2

// compareBaseline is how long a comparison runs the baseline of each row,
// as locktorture compare does: it gives the row's speed.
const compareBaseline = 3 * time.Second

// Compare runs the lock as a row of locktorture compare's table: through
// every fault family that applies to it, beside the built-in rows over
// the same servers, its clients processes of the test binary (TestMain
// must call Main), every cell on servers of its own. It writes what an
// unsharded locktorture compare writes — compare.html, compare.txt,
// compare.png, results.json, junit.xml — logs the table and the path of
// compare.html, and runs a subtest per cell of the lock's row
// (TestX/pause/seed-1), failing it when the cell is not as the claim says
// or when its run failed; a family the lock cannot take is a skipped
// subtest saying why. The built-in rows' cells are not the test's lock:
// one not as its family expects is logged, never failed. The comparison
// runs whole before its subtests report, whatever -run selects of them.
func Compare(t *testing.T, c Comparison) *CompareResult {
	t.Helper()
	id := callID(t)
	s := c.suite()
	if child := childID(); child != "" {
		if child == id {
			serveChild(t, s)
		}
		return &CompareResult{} // another call's client process
	}
	if c.New == nil {
		t.Fatal("locktest: Comparison.New is nil: give the constructor of your lock")
	}
	if !installed() {
		t.Fatal("locktest: Compare runs the lock's clients as processes of the test binary: add\n\tfunc TestMain(m *testing.M) { locktest.Main(m) }")
	}
	opt, name, err := c.options(t, s)
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	remove, err := backends.RegisterUserProgram(name, userCommand(t, id), s.kinds()...)
	if err != nil {
		t.Fatalf("locktest: Comparison.Name: %v", err)
	}
	defer remove()
	shares, _, err := runner.PlanShards(opt)
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	planned := map[matrix.CellKey]matrix.Planned{}
	for _, p := range shares[0] {
		planned[p.Key] = p
	}
	opt.OnCell = func(ev runner.CellEvent) {
		if ev.Done {
			t.Logf("[%d/%d] %s: %s (%.1fs)", ev.Index+1, ev.Total, ev.Key, cellWords(ev.Cell), ev.Cell.Seconds)
		}
	}
	out, err := runner.RunMatrix(t.Context(), opt)
	if out == nil {
		t.Fatalf("locktest: the comparison: %v", err)
	}
	if err != nil {
		t.Errorf("locktest: the comparison: %v", err)
	}
	m := out.Matrix
	if why := serversMissing(m, name); why != "" {
		t.Skipf("locktest: cannot run servers here: %s (or run them in containers: %s=docker)", why, EnvServers)
	}
	results := rowResults(out, name)
	if c.judged() {
		if err := c.judgeRow(out, name, planned, results); err != nil {
			t.Errorf("locktest: %v", err)
		}
	}
	res := &CompareResult{Dir: out.Dir, Row: name, Matrix: m}
	html := filepath.Join(out.Dir, reports.FileCompareHTML)
	t.Logf("the comparison (%s):\n%s", opt.Command, reports.CompareTable(m))
	t.Logf("compare.html: %s", html)
	if c.Store == "" && os.Getenv(EnvStore) == "" && !keepPassing() {
		t.Logf("(in a temporary store, removed after the test unless it fails: %s=1, %s or Comparison.Store keeps it)", EnvKeep, EnvStore)
	}
	logBeside(t, m, name)
	rowSubtests(t, out, name, opt, results)
	return res
}

// suite is the comparison's lock as a Suite: what a client process and
// the servers' settings read.
func (c Comparison) suite() Suite {
	s := Suite{New: c.New, Kinds: c.Kinds, Claims: c.Claims, Like: c.Like, Servers: c.Servers, Images: c.Images}
	if c.Claim != nil {
		s.Claim = *c.Claim
	}
	return s
}

// judged reports whether the row states a claim.
func (c Comparison) judged() bool {
	return c.Claim != nil || len(c.Claims) > 0 || c.Like != ""
}

// expectation is the row's expectation for sc, and whether it states one
// (a family that neither Claim nor Claims covers states none).
func (c Comparison) expectation(sc *scenarios.Scenario) (expectation, bool) {
	if c.Like != "" {
		return likeExpectation(c.Like, sc), true
	}
	if cl, ok := c.Claims[sc.Name]; ok {
		return claimExpectation(cl, sc), true
	}
	if c.Claim != nil {
		return claimExpectation(*c.Claim, sc), true
	}
	return expectation{}, false
}

// rowName is what a row's name may be (compare --exec's rule), and
// notRowName the runs of characters it may not hold.
var (
	rowName    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	notRowName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)
)

// options are the comparison's matrix options and the row's name.
func (c Comparison) options(t *testing.T, s Suite) (runner.MatrixOptions, string, error) {
	if err := s.checkKinds(); err != nil {
		return runner.MatrixOptions{}, "", err
	}
	if c.Like != "" {
		if _, _, err := backends.Lookup(c.Like); err != nil {
			return runner.MatrixOptions{}, "", fmt.Errorf("Comparison.Like: %w", err)
		}
	}
	name := c.Name
	if name == "" {
		name = strings.Trim(notRowName.ReplaceAllString(t.Name(), "-"), "-._")
	}
	if !rowName.MatchString(name) {
		return runner.MatrixOptions{}, "", fmt.Errorf("Comparison.Name %q: a row's name is letters, digits, '.', '_' and '-', from a letter or digit", name)
	}
	fams := c.Families
	if len(fams) == 0 {
		fams = scenarios.Families
	}
	scs := []string{"baseline"}
	for _, f := range fams {
		if !slices.Contains(scenarios.Families, f) {
			return runner.MatrixOptions{}, "", fmt.Errorf("Comparison.Families: unknown family %q (known: %s)", f, strings.Join(scenarios.Families, ", "))
		}
		scs = append(scs, scenarios.FamilyScenarios(f)...)
	}
	for k := range c.Claims {
		if !slices.Contains(scs, k) {
			return runner.MatrixOptions{}, "", fmt.Errorf("Comparison.Claims: %q is no scenario of this comparison (%s)", k, strings.Join(scs, ", "))
		}
	}
	beside, err := c.beside(s.kinds())
	if err != nil {
		return runner.MatrixOptions{}, "", err
	}
	seeds, err := c.seeds()
	if err != nil {
		return runner.MatrixOptions{}, "", err
	}
	opt := runner.MatrixOptions{
		Scenarios: scs, Backends: append(beside, name), Seeds: seeds, Store: c.Store,
		Command:  fmt.Sprintf("go test -run '%s'", runPattern(t.Name())),
		Parallel: c.Parallel, Compare: true, Prestart: true, // as compare's defaults
		OneSeed: []string{"baseline"}, Durations: map[string]time.Duration{"baseline": compareBaseline},
	}
	if err := serverOverrides(s, &opt); err != nil {
		return runner.MatrixOptions{}, "", err
	}
	if opt.Parallel <= 0 {
		opt.Parallel = compareParallel
	}
	if opt.Store == "" {
		opt.Store = os.Getenv(EnvStore)
	}
	if opt.Store == "" {
		dir, err := os.MkdirTemp("", "locktest-compare-")
		if err != nil {
			return runner.MatrixOptions{}, "", err
		}
		t.Cleanup(func() {
			if !t.Failed() && !keepPassing() {
				_ = os.RemoveAll(dir)
			}
		})
		opt.Store = dir
	}
	return opt, name, nil
}

// beside are the built-in rows beside the lock's: Comparison.Beside, or
// every built-in backend over kinds only.
func (c Comparison) beside(kinds []string) ([]string, error) {
	if c.Beside != nil {
		for _, b := range c.Beside {
			if _, _, err := backends.Lookup(b); err != nil || !builtin(b) {
				return nil, fmt.Errorf("Comparison.Beside: %q is no built-in backend (locktorture list backends)", b)
			}
		}
		return slices.Clone(c.Beside), nil
	}
	var out []string
	for _, b := range backends.Names() {
		if builtin(b) && backendOver(b, kinds) {
			out = append(out, b)
		}
	}
	return out, nil
}

// builtin reports whether backend b is a built-in row of compare: not
// exec, not a program of the user's, not a lock of a Run with
// in-process clients.
func builtin(b string) bool {
	inprocMu.Lock()
	inproc := inprocNames[b]
	inprocMu.Unlock()
	return b != scenarios.ExecBackend && !backends.IsUserProgram(b) && !inproc
}

// seeds is the number of seeds per family: -locktest.seeds, else
// LOCKTEST_SEEDS, else Comparison.Seeds, else 1.
func (c Comparison) seeds() (int, error) {
	v := *seedsFlag
	if v == "" {
		v = os.Getenv(EnvSeeds)
	}
	if v == "" {
		return max(c.Seeds, 1), nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1000 {
		return 0, fmt.Errorf("seeds %q: want a number from 1 to 1000", v)
	}
	return n, nil
}

// serverOverrides sets where every cell's servers run: local (nothing to
// say), docker with its images, or the servers a file names (one cell at
// a time on them unless told, as compare does).
func serverOverrides(s Suite, opt *runner.MatrixOptions) error {
	where := serversSetting(s)
	images, err := s.images()
	if err != nil {
		return err
	}
	switch {
	case where == cluster.ServersLocal:
	case strings.HasSuffix(where, ".yaml") || strings.HasSuffix(where, ".yml"):
		opt.Overrides.Servers, opt.Overrides.ServersFile = ptr(cluster.ServersExternal), ptr(where)
		opt.RunArgs = append(opt.RunArgs, "--servers", cluster.ServersExternal, "--servers-file", where)
		if opt.Parallel <= 0 {
			opt.Parallel = 1
		}
	default:
		opt.Overrides.Servers, opt.Overrides.Images = ptr(where), images
		opt.RunArgs = append(opt.RunArgs, "--servers", where)
	}
	return nil
}

// userCommand runs the test binary as one of the call's client
// processes: the test alone, and the flag naming the call.
func userCommand(t *testing.T, id string) []string {
	self, err := os.Executable()
	if err != nil {
		t.Fatalf("locktest: the test binary, to run clients: %v", err)
	}
	return []string{self, "-test.run=" + runPattern(t.Name()), "-test.count=1", "-" + childFlagName + "=" + id}
}

// cellWords is a finished cell in a few words, for the progress lines.
func cellWords(c matrix.Cell) string {
	switch {
	case c.Verdict == matrix.VerdictError:
		return "harness error: " + firstLine(c.Error)
	case c.Headline != "":
		return c.Headline
	}
	return c.Verdict
}

// serversMissing says what to install when no cell of the row could start
// its servers because their program is missing here ("" otherwise).
func serversMissing(m *matrix.Matrix, row string) string {
	why := ""
	for _, c := range m.Cells {
		if c.Backend != row {
			continue
		}
		if c.Verdict != matrix.VerdictError || !strings.Contains(c.Error, cluster.ErrMissingBinary.Error()) {
			return ""
		}
		why = firstLine(c.Error)
		if i := strings.Index(why, cluster.ErrMissingBinary.Error()); i >= 0 {
			why = why[i:] // not the backend's name again and again
		}
		why = strings.ReplaceAll(why, " (make deps)", "")
	}
	return why
}

// rowResults reads the results of the row's runs, by cell (none for a
// cell whose run failed).
func rowResults(out *runner.MatrixOutcome, row string) map[matrix.CellKey]*checker.Results {
	rs := map[matrix.CellKey]*checker.Results{}
	for _, c := range out.Matrix.Cells {
		if c.Backend != row || c.Verdict == matrix.VerdictError || c.Dir == "" {
			continue
		}
		if res, err := reports.ReadResults(filepath.Join(out.Dir, filepath.FromSlash(c.Dir), reports.FileResults)); err == nil {
			rs[c.CellKey] = res
		}
	}
	return rs
}

// judgeRow judges the row's cells against the claim — the same judgement
// Run makes — in place of the no claim a program of the user's is
// planned with, and writes the comparison's files again.
func (c Comparison) judgeRow(out *runner.MatrixOutcome, row string, planned map[matrix.CellKey]matrix.Planned, results map[matrix.CellKey]*checker.Results) error {
	m := out.Matrix
	for i := range m.Cells {
		cell := &m.Cells[i]
		p, ok := planned[cell.CellKey]
		if cell.Backend != row || !ok {
			continue
		}
		e, ok := c.expectation(p.Scenario)
		if !ok {
			continue
		}
		cell.Expected, cell.ExpectedCheckers = expectedText(e), e.checkers
		if cell.Verdict == matrix.VerdictError {
			continue
		}
		res := results[cell.CellKey]
		if res == nil {
			cell.AsExpected, cell.Why = false, "its run's results.json could not be read"
			continue
		}
		cell.AsExpected, cell.Why = judge(res, e, p.Scenario)
	}
	if err := reports.WriteMatrix(context.Background(), out.Dir, m); err != nil {
		return fmt.Errorf("the comparison's report: %w", err)
	}
	return nil
}

// expectedText is an expectation as a cell's expected verdict: "valid",
// "invalid", or "valid or invalid" when a fault may or may not make a
// stale holder.
func expectedText(e expectation) string {
	if e.orValid && e.valid != "valid" {
		return "valid or " + e.valid
	}
	return e.valid
}

// logBeside logs the built-in rows' cells that are not as their family
// expects: not the test's lock, so never a failure.
func logBeside(t *testing.T, m *matrix.Matrix, row string) {
	t.Helper()
	for _, c := range m.Cells {
		if c.Backend == row || c.AsExpected {
			continue
		}
		t.Logf("beside: %s: %s, not as its family expects (%s): a built-in row, logged, not failed", c.CellKey, c.Verdict, c.Why)
	}
}

// rowSubtests runs a subtest per cell of the row, in the plan's order
// (TestX/pause/seed-1), and a skipped one per family it did not run.
func rowSubtests(t *testing.T, out *runner.MatrixOutcome, row string, opt runner.MatrixOptions, results map[matrix.CellKey]*checker.Results) {
	t.Helper()
	m := out.Matrix
	for _, sc := range opt.Scenarios {
		for _, cell := range m.Cells {
			if cell.Backend != row || cell.Scenario != sc {
				continue
			}
			t.Run(fmt.Sprintf("%s/seed-%d", sc, cell.Seed), func(t *testing.T) {
				report := filepath.Join(out.Dir, filepath.FromSlash(cell.Dir), reports.FileIndex)
				switch {
				case cell.Verdict == matrix.VerdictError:
					t.Errorf("locktest: %s: harness error: %s\nrepeat with: %s", cell.CellKey, cell.Error, opt.Command)
				case !cell.AsExpected:
					summary := cell.Headline
					if res := results[cell.CellKey]; res != nil {
						summary = strings.TrimRight(reports.Summary(res, 3), "\n")
					}
					t.Errorf("locktest: %s: %s\n%s\nseed %d; repeat with: %s (the whole comparison; the cell alone: locktest.Run with Scenarios %q and -locktest.seed=%d)\nfull report: %s",
						cell.CellKey, cell.Why, summary, cell.Seed, opt.Command, sc, cell.Seed, report)
				case cell.Expected == matrix.NoClaim:
					t.Logf("%s: %s, judged against no claim; %s", cell.CellKey, cell.Verdict, cell.Headline)
				default:
					t.Logf("%s: %s, as the claim says (expected %s); %s", cell.CellKey, cell.Verdict, cell.Expected, cell.Headline)
				}
			})
		}
		for _, sk := range m.Skipped {
			if sk.Backend == row && sk.Scenario == sc {
				t.Run(sc, func(t *testing.T) { t.Skip(sk.Why) })
				break
			}
		}
	}
}
