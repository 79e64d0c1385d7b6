// Package matrix is a matrix of runs as data — the one meaning of
// "matrix" in this code: which cells a matrix (or a comparison, which is a
// matrix of fault families) runs (Plan: scenarios × backends × seeds,
// shards), each finished cell with its verdict judged against its row's
// claim (NewCell, via scenarios.Judge) and the known finding that explains
// a contradiction, the matrix's results.json (Read, Write) and the merging
// of shards (Merge). It starts no server and draws nothing: runner runs the
// cells (runner/matrix.go), reports renders them (reports/matrix*.go), and
// cmd/locktorture has one file per command (matrix.go, compare.go,
// merge.go, report.go).
package matrix

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/findings"
	"github.com/locktorture/locktorture/internal/atomicfile"
	"github.com/locktorture/locktorture/scenarios"
)

// fileResults is a matrix's results.json, in its directory.
const fileResults = "results.json"

// Kind marks a results.json as a matrix's, not a run's.
const Kind = "matrix"

// Cell verdicts beyond a run's own (valid, invalid, unknown).
const (
	// VerdictError is a cell whose run failed with a harness error.
	VerdictError = "error"
	// VerdictMissing is a cell of the plan that no merged shard ran.
	VerdictMissing = "missing"
)

// NoClaim is the expectation of a cell whose lock makes no claim the
// matrix knows of: a program of the user's (compare --exec NAME=...). Its
// verdict is reported as it came; it is never judged against one, so a
// run that ended (valid, invalid or unknown) is as expected, and only a
// harness error is not.
const NoClaim = scenarios.NoClaim

// ErrMatrix is wrapped by errors about a matrix's files or shards.
var ErrMatrix = errors.New("matrix")

// CellKey names one cell of a matrix: a scenario run with a backend and a
// seed.
type CellKey struct {
	Scenario string `json:"scenario"`
	Backend  string `json:"backend"`
	Seed     int64  `json:"seed"`
	// Fencing is the fencing mode the cell overrides the scenario's with
	// (a comparison's fenced cells: "all"); empty for the scenario's own.
	Fencing string `json:"fencing,omitempty"`
	// Version names the version set (Matrix.Versions) the cell's servers
	// came from; empty in a matrix without a version axis.
	Version string `json:"version,omitempty"`
}

// String is "scenario / backend (seed N)", with ", fencing MODE" after
// the backend for a fenced cell and " @ VERSION" for a version set's.
func (k CellKey) String() string {
	at := ""
	if k.Version != "" {
		at = " @ " + k.Version
	}
	if k.Fencing != "" {
		return fmt.Sprintf("%s / %s, fencing %s%s (seed %d)", k.Scenario, k.Backend, k.Fencing, at, k.Seed)
	}
	return fmt.Sprintf("%s / %s%s (seed %d)", k.Scenario, k.Backend, at, k.Seed)
}

func compareKeys(a, b CellKey) int {
	return cmp.Or(cmp.Compare(a.Scenario, b.Scenario), cmp.Compare(a.Backend, b.Backend), cmp.Compare(a.Fencing, b.Fencing),
		cmp.Compare(a.Version, b.Version), cmp.Compare(a.Seed, b.Seed))
}

// Skipped is a scenario/backend pair the matrix did not run because
// the scenario cannot apply to that backend.
type Skipped struct {
	Scenario string `json:"scenario"`
	Backend  string `json:"backend"`
	// Version is the version set refused (empty: every one).
	Version string `json:"version,omitempty"`
	// Why says what made it inapplicable.
	Why string `json:"why"`
}

// Cell is one run of a matrix, judged against the scenario's
// expectation for its backend.
type Cell struct {
	CellKey
	// Expected is the expected verdict ("valid" when the scenario states
	// none); ExpectedCheckers the expected verdicts of single checkers.
	Expected         string            `json:"expected"`
	ExpectedCheckers map[string]string `json:"expected_checkers,omitempty"`
	// ExpectedWhy says why an expectation of either verdict
	// (scenarios.Either) is one: what the lock's claim leaves open.
	ExpectedWhy string `json:"expected_why,omitempty"`
	// Verdict is the run's verdict (valid, invalid, unknown), or "error"
	// when the harness failed, or "missing" when no merged shard ran it.
	Verdict string `json:"verdict"`
	// Checkers are the verdicts of the checkers that ran.
	Checkers map[string]string `json:"checkers,omitempty"`
	// AsExpected is set when the verdict (and every expected checker
	// verdict) matches; Why says what differs when it does not.
	AsExpected bool   `json:"as_expected"`
	Why        string `json:"why,omitempty"`
	// KnownFinding names the finding (locktorture list findings) that
	// explains a cell whose invalid run contradicts the row's claim of
	// valid: the cell stays NOT AS EXPECTED (the expectation is the claim,
	// never the finding), and the matrix counts it as known, not new.
	KnownFinding string `json:"known_finding,omitempty"`
	// Error is the harness error of a failed run.
	Error string `json:"error,omitempty"`
	// Dir is the run's directory relative to the matrix directory, empty
	// when the run left none.
	Dir string `json:"dir,omitempty"`
	// Shrink is the command that shrinks the cell's run to the smallest
	// scenario that still fails: set on an invalid cell whose faults were
	// a random mix.
	Shrink string `json:"shrink,omitempty"`
	// Headline is the first line of the run's summary.
	Headline string `json:"headline,omitempty"`
	// Ops is the history's length; Holds the locks granted; Violations the
	// safety violations found (mutex overlaps + stale writes accepted + lost
	// updates); Span the run's length on the history clock (ns).
	Ops        int   `json:"ops"`
	Holds      int   `json:"holds"`
	Violations int   `json:"violations"`
	Span       int64 `json:"span"`
	// HoldsPerSecond is the stats checker's lock cycles per second.
	HoldsPerSecond float64 `json:"holds_per_second"`
	// Safety says what kind of violations Violations counts: stale
	// holders and double grants (mutex), stale writes accepted and
	// rejected (fencing), lost updates.
	Safety *Safety `json:"safety,omitempty"`
	// AcquireP50 and AcquireP99 are the granted acquires' latency (ns).
	AcquireP50 int64 `json:"acquire_p50,omitempty"`
	AcquireP99 int64 `json:"acquire_p99,omitempty"`
	// Recovery is how long the lock had no holder after the faults ended
	// (a comparison's cells; nil when not measured or no fault ended).
	Recovery *Recovery `json:"recovery,omitempty"`
	// ServerVersions are the versions the cell's servers reported, by
	// server name ("redis-0": "7.0.15").
	ServerVersions map[string]string `json:"server_versions,omitempty"`
	// Library names the third-party library the cell's backend drives
	// (name, version, language), when it is one.
	Library *checker.Library `json:"library,omitempty"`
	// Seconds is how long the cell took, servers and checking included.
	Seconds float64 `json:"seconds"`
}

// Matrix is a matrix run's results.json: every cell with its verdict and
// expectation. It is what a matrix's report is drawn from.
type Matrix struct {
	// Kind is always "matrix".
	Kind string `json:"kind"`
	// Valid is set when every planned cell ran and came out as expected,
	// or contradicted its row's claim as a known finding says it does
	// (Cell.KnownFinding): only something new makes a matrix invalid.
	Valid bool `json:"valid"`
	// Started names the matrix (its directory's timestamp, YYYYMMDDTHHMMSS).
	Started string `json:"started"`
	// Command repeats the matrix (or, merged, the merge).
	Command string `json:"command,omitempty"`
	// Shard is "i/n" for one shard's share, empty for a whole matrix; Shards
	// lists the merged shards' directories.
	Shard  string   `json:"shard,omitempty"`
	Shards []string `json:"shards,omitempty"`
	// Seeds is the number of seeds per scenario/backend pair.
	Seeds int `json:"seeds"`
	// Scenarios and Backends are the rows and columns, in order.
	Scenarios []string `json:"scenarios"`
	Backends  []string `json:"backends"`
	// Planned lists every cell of the whole plan, every shard's included,
	// so that a merge can tell when a shard is missing.
	Planned []CellKey `json:"planned"`
	// Skipped are the pairs the scenarios do not apply to.
	Skipped []Skipped `json:"skipped,omitempty"`
	// Versions are the version sets every cell ran once with (the
	// version axis: locktorture matrix --images or --versions); empty for
	// one set, the scenarios' own.
	Versions []Version `json:"versions,omitempty"`
	// Cells are the cells run, in plan order.
	Cells []Cell `json:"cells"`
	// Compare is set for a backend comparison (locktorture compare): its
	// report adds the comparison table (backends × fault families).
	Compare bool `json:"compare,omitempty"`
	// Interrupted is set when the matrix was stopped before it ran every cell.
	Interrupted bool `json:"interrupted,omitempty"`
	// Seconds is how long the matrix took.
	Seconds float64 `json:"seconds"`
}

// NewCell makes the cell of a finished run: its verdict, numbers and
// judgement against the expectation. dir is the run directory relative to
// the matrix directory.
func NewCell(key CellKey, res *checker.Results, expected string, expectedCheckers map[string]string, dir string) Cell {
	if expected == "" {
		expected = checker.Valid.String()
	}
	c := Cell{CellKey: key, Expected: expected, ExpectedCheckers: expectedCheckers, Dir: filepath.ToSlash(dir)}
	c.AsExpected, c.Why = scenarios.Judge(res, expected, expectedCheckers)
	if res == nil {
		c.Verdict = checker.Unknown.String()
		return c
	}
	c.Verdict = res.Valid.String()
	c.Library = res.Library
	c.Checkers = map[string]string{}
	for n, v := range res.Checkers.Verdicts() {
		c.Checkers[n] = v.String()
	}
	c.Ops = res.Ops
	cs := &res.Checkers
	if s := cs.Stats; s != nil {
		c.Holds, c.Span, c.HoldsPerSecond = s.Holds, s.Span, s.HoldsPerSecond
	}
	if m := cs.Mutex; m != nil {
		c.Violations += m.Count
		if c.Holds == 0 {
			c.Holds = m.Holds
		}
	}
	if f := cs.Fencing; f != nil {
		c.Violations += f.Count
	}
	if l := cs.LostUpdate; l != nil {
		c.Violations += l.Count
	}
	c.Safety = safetyOf(cs)
	if s := cs.Stats; s != nil {
		c.AcquireP50, c.AcquireP99 = s.AcquireLatency.P50, s.AcquireLatency.P99
	}
	return c
}

// Safety counts a run's violations by kind.
type Safety struct {
	StaleHolders  int `json:"stale_holders"`
	DoubleGrants  int `json:"double_grants"`
	StaleWrites   int `json:"stale_writes"`
	RejectedStale int `json:"rejected_stale"`
	LostUpdates   int `json:"lost_updates"`
}

func safetyOf(cs *checker.Checkers) *Safety {
	s := &Safety{}
	if m := cs.Mutex; m != nil {
		s.StaleHolders, s.DoubleGrants = m.StaleHolders, m.DoubleGrants
	}
	if f := cs.Fencing; f != nil {
		s.StaleWrites, s.RejectedStale = f.Count, f.RejectedStale
	}
	if l := cs.LostUpdate; l != nil {
		s.LostUpdates = l.Count
	}
	return s
}

// ErrorCell makes the cell of a run that failed with a harness error.
func ErrorCell(key CellKey, expected string, expectedCheckers map[string]string, err error) Cell {
	if expected == "" {
		expected = checker.Valid.String()
	}
	msg := "the run failed"
	if err != nil {
		msg = err.Error()
	}
	return Cell{CellKey: key, Expected: expected, ExpectedCheckers: expectedCheckers, Verdict: VerdictError,
		Error: msg, Why: "harness error: " + msg}
}

// Finish sorts the cells in plan order and sets Valid: every planned cell
// ran, none was interrupted, and each came out as expected.
func (m *Matrix) Finish() {
	m.Kind = Kind
	if m.Seeds < 1 {
		m.Seeds = 1
	}
	order := map[CellKey]int{}
	for i, k := range m.Planned {
		order[k] = i
	}
	slices.SortStableFunc(m.Cells, func(a, b Cell) int {
		ia, oka := order[a.CellKey]
		ib, okb := order[b.CellKey]
		if oka && okb {
			return cmp.Compare(ia, ib)
		}
		if oka != okb {
			if oka {
				return -1
			}
			return 1
		}
		return compareKeys(a.CellKey, b.CellKey)
	})
	m.Valid = !m.Interrupted && len(m.Cells) > 0
	ran := map[CellKey]bool{}
	for i := range m.Cells {
		c := &m.Cells[i]
		ran[c.CellKey] = true
		c.KnownFinding = knownFinding(*c)
		if !c.AsExpected && c.KnownFinding == "" {
			m.Valid = false
		}
	}
	if m.Shard == "" {
		for _, k := range m.Planned {
			if !ran[k] {
				m.Valid = false
			}
		}
	}
}

// knownFinding names the finding that explains cell c, when its run
// contradicts the row's claim as the finding shows: c was expected valid
// (the claim), came out invalid, and a finding covers its scenario on its
// backend. "" otherwise: as expected, an error, a missing or unknown run,
// or a contradiction no finding explains (something new).
func knownFinding(c Cell) string {
	if c.AsExpected || c.Verdict != checker.Invalid.String() || c.Expected != checker.Valid.String() {
		return ""
	}
	// A library row at another version (compare --library: ROW@V) is
	// covered as ROW is.
	row, _, _ := strings.Cut(c.Backend, "@")
	return findings.Covering(c.Scenario, row)
}

// Known counts the cells NOT as expected that a known finding explains
// (Cell.KnownFinding).
func (m *Matrix) Known() int {
	n := 0
	for _, c := range m.Cells {
		if !c.AsExpected && c.KnownFinding != "" {
			n++
		}
	}
	return n
}

// Stale lists the known findings this matrix could have shown — it ran
// the finding's primary cell (findings.Finding.Primary), to a verdict —
// while no cell the finding covers contradicted its row's claim: fixed
// upstream, or no longer shown here. Each is said loudly; the finding
// belongs in the record's fixed section (docs/findings.md) once repro
// agrees. A finding's other cells (zk-lock's zk-partition, say) show it
// only sometimes, so they alone never make it stale.
func (m *Matrix) Stale() []string {
	ran := map[string]int{}
	contradicted := map[string]bool{}
	for _, c := range m.Cells {
		if c.Verdict != checker.Valid.String() && c.Verdict != checker.Invalid.String() || c.Expected != checker.Valid.String() {
			continue
		}
		if id := findings.PrimaryOf(c.Scenario, c.Backend); id != "" {
			ran[id]++
		}
		if c.KnownFinding != "" {
			contradicted[c.KnownFinding] = true
		}
	}
	var out []string
	for _, id := range findings.IDs() {
		if ran[id] > 0 && !contradicted[id] {
			out = append(out, id)
		}
	}
	return out
}

// Counts tallies the cells: as expected, not as expected (a verdict other
// than the expected one), harness errors, and planned cells missing.
func (m *Matrix) Counts() (ok, differ, errs, missing int) {
	for _, c := range m.Cells {
		switch {
		case c.AsExpected:
			ok++
		case c.Verdict == VerdictError:
			errs++
		case c.Verdict == VerdictMissing:
			missing++
		default:
			differ++
		}
	}
	return ok, differ, errs, missing
}

// HasErrors reports whether some cell's run failed with a harness error.
func (m *Matrix) HasErrors() bool {
	for _, c := range m.Cells {
		if c.Verdict == VerdictError {
			return true
		}
	}
	return false
}

// Grid returns each cell's verdict and whether it was as expected, keyed
// by scenario, backend and seed: what two matrices must share to give the
// same verdict grid.
func (m *Matrix) Grid() map[CellKey]string {
	g := map[CellKey]string{}
	for _, c := range m.Cells {
		s := c.Verdict
		if c.AsExpected {
			s += " (as expected)"
		} else {
			s += " (NOT as expected)"
		}
		g[c.CellKey] = s
	}
	return g
}

// maxResultsBytes bounds a matrix's results.json as read: some
// thousands of cells take a few megabytes; anything past this is not one.
const maxResultsBytes = 256 << 20

// Read reads a matrix's results.json; path is the file or its
// directory. A results.json that is not there wraps fs.ErrNotExist; one
// that is there but is no matrix's (not a regular file, garbage, cut
// short, empty, a run's) names the file.
func Read(path string) (*Matrix, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, fileResults)
	}
	b, err := readResults(path)
	if err != nil {
		return nil, err
	}
	var m Matrix
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %s is not a matrix's results.json: %w", ErrMatrix, path, err)
	}
	if m.Kind != Kind {
		return nil, fmt.Errorf("%w: %s is not a matrix's results (kind %q)", ErrMatrix, path, m.Kind)
	}
	return &m, nil
}

// readResults reads a results.json that must be a regular file of a
// sane size: never a device or a named pipe, which would be read
// forever or block.
func readResults(path string) ([]byte, error) {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrMatrix, err)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("%w: %s is not a regular file (a matrix's results.json is one)", ErrMatrix, path)
	case st.Size() > maxResultsBytes:
		return nil, fmt.Errorf("%w: %s is %d bytes, more than a matrix's results.json (at most %d)", ErrMatrix, path, st.Size(), maxResultsBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMatrix, err)
	}
	return b, nil
}

// IsDir reports whether dir holds a matrix's results.json.
func IsDir(dir string) bool {
	b, err := readResults(filepath.Join(dir, fileResults))
	if err != nil {
		return false
	}
	var k struct {
		Kind string `json:"kind"`
	}
	return json.Unmarshal(b, &k) == nil && k.Kind == Kind
}

// Write writes m as dir/results.json, atomically.
func Write(dir string, m *Matrix) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("%w: encode results: %w", ErrMatrix, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%w: %w", ErrMatrix, err)
	}
	return atomicfile.Write(filepath.Join(dir, fileResults), append(b, '\n'))
}

// Merge joins shards of one matrix (read from dirs) into one
// matrix whose report goes to outDir: the cells of all shards, with each
// cell's run directory made relative to outDir. Every shard must come from
// the same plan, and no cell may appear twice; a planned cell that no shard
// ran is added as "missing" (not as expected). A shard's cell must be one
// of its plan's, with verdicts that are verdicts (else an error names the
// file and the cell), and is judged again against its scenario's claim
// (claims): whether it came out as expected is never the shard's word.
func Merge(dirs []string, outDir string) (*Matrix, error) {
	if len(dirs) == 0 {
		return nil, fmt.Errorf("%w: nothing to merge", ErrMatrix)
	}
	out := &Matrix{Kind: Kind}
	var planKey string
	var shardsIn []string
	seen := map[CellKey]string{}
	claimsBy := map[string]*claims{} // by the shard's command
	for i, d := range dirs {
		m, err := Read(d)
		if err != nil {
			return nil, err
		}
		file := d
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			file = filepath.Join(d, fileResults)
		}
		planned := map[CellKey]bool{}
		for _, k := range m.Planned {
			planned[k] = true
		}
		cl := claimsBy[m.Command]
		if cl == nil {
			cl = claimsOf(m.Command)
			claimsBy[m.Command] = cl
		}
		pk := planString(m.Planned)
		if i == 0 {
			planKey = pk
			out.Seeds, out.Planned = m.Seeds, append([]CellKey(nil), m.Planned...)
			out.Scenarios, out.Backends = append([]string(nil), m.Scenarios...), append([]string(nil), m.Backends...)
			out.Skipped = append([]Skipped(nil), m.Skipped...)
			out.Versions, out.Compare = append([]Version(nil), m.Versions...), m.Compare
		} else if pk != planKey || m.Compare != out.Compare {
			return nil, fmt.Errorf("%w: %s was planned differently from %s (other scenarios, backends, seeds or version sets): not shards of one matrix", ErrMatrix, d, dirs[0])
		}
		if m.Shard != "" {
			shardsIn = append(shardsIn, m.Shard)
		}
		out.Shards = append(out.Shards, filepath.ToSlash(d))
		out.Seconds = max(out.Seconds, m.Seconds)
		out.Interrupted = out.Interrupted || m.Interrupted
		if m.Started > out.Started {
			out.Started = m.Started
		}
		for _, c := range m.Cells {
			// Nothing a shard says of a cell is taken unchecked: a
			// hand-edited or damaged results.json is refused, and every
			// cell is judged again against its claim.
			if err := cl.judgeShardCell(file, planned, &c); err != nil {
				return nil, err
			}
			if prev, dup := seen[c.CellKey]; dup {
				return nil, fmt.Errorf("%w: %s ran in both %s and %s", ErrMatrix, c.CellKey, prev, d)
			}
			seen[c.CellKey] = d
			if c.Dir != "" {
				abs := filepath.Join(d, filepath.FromSlash(c.Dir))
				if rel, err := relPath(outDir, abs); err == nil {
					c.Dir = filepath.ToSlash(rel)
				}
			}
			out.Cells = append(out.Cells, c)
		}
	}
	why := "no shard ran this cell" + absentShards(shardsIn)
	for _, k := range out.Planned {
		if _, ok := seen[k]; !ok {
			out.Cells = append(out.Cells, Cell{CellKey: k, Verdict: VerdictMissing, Expected: "?", Why: why})
		}
	}
	out.Finish()
	return out, nil
}

// absentShards names the shards of n that did not come, from the
// "i/n" of those that did (all of one n): " (shard 2/3 never came)", or ""
// when that cannot be told.
func absentShards(came []string) string {
	n, have := 0, map[int]bool{}
	for _, s := range came {
		i, k, err := ParseShard(s)
		if err != nil || (n != 0 && k != n) {
			return ""
		}
		n, have[i] = k, true
	}
	var absent []string
	for i := 1; i <= n; i++ {
		if !have[i] {
			absent = append(absent, fmt.Sprintf("%d/%d", i, n))
		}
	}
	switch len(absent) {
	case 0:
		return ""
	case 1:
		return " (shard " + absent[0] + " never came)"
	}
	return " (shards " + strings.Join(absent, ", ") + " never came)"
}

// planString identifies a plan for comparison.
func planString(ks []CellKey) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = fmt.Sprintf("%s\x00%s\x00%d\x00%s\x00%s", k.Scenario, k.Backend, k.Seed, k.Fencing, k.Version)
	}
	sort.Strings(s)
	return strings.Join(s, "\x01")
}

// relPath is filepath.Rel on absolute forms of both paths.
func relPath(base, target string) (string, error) {
	ab, err := filepath.Abs(base)
	if err != nil {
		return "", err
	}
	at, err := filepath.Abs(target)
	if err != nil {
		return "", err
	}
	return filepath.Rel(ab, at)
}
