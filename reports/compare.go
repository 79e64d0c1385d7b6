package reports

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/internal/words"
	"github.com/locktorture/locktorture/matrix"
	"github.com/locktorture/locktorture/scenarios"
)

// Files of a comparison (a matrix run by locktorture compare), beside the
// matrix's own.
const (
	FileCompareHTML = "compare.html"
	FileComparePNG  = "compare.png"
	fileCompareText = "compare.txt"
)

// Safety classes of a comparison cell, from best to worst.
const (
	classSafe    = "safe"
	classFenced  = "fenced"
	classUnsafe  = "unsafe"
	classUnknown = "unknown"
	classError   = "error"
	classNotRun  = "notrun"
	// classMissing is a cell some of whose runs no merged shard brought.
	classMissing = "missing"
)

// compareCell is one family × backend (× fencing) of a comparison: every
// seed's run of it, or why it was not run. Only like runs are summed: the
// same scenario, backend and fencing mode, differing by seed alone.
type compareCell struct {
	Runs   []matrix.Cell
	NotRun string
}

// compareRow is one backend (or a backend with fencing) and its cells.
type compareRow struct {
	Backend, Fencing string
	// Cycles, P50 and P99 are the medians over the baseline's seeds
	// (cycles/s, ns); Speed is false when no baseline ran.
	Cycles   float64
	P50, P99 int64
	Speed    bool
	Cells    []compareCell
	// AsExpected and Judged count the row's runs as expected, of all;
	// NoClaim those judged against no claim (a program of the user's).
	AsExpected, Judged, NoClaim int
	// Library is the third-party library the backend drives, as its runs
	// recorded it (nil for the project's own locks).
	Library *checker.Library
}

// LibraryText names the row's library and its version: "" for a lock of
// the project's own.
func (r compareRow) LibraryText() string {
	if r.Library == nil {
		return ""
	}
	return fmt.Sprintf("%s %s (%s)", r.Library.Name, r.Library.Version, r.Library.Language)
}

// ExpectedText is the row's as-expected column: its runs as expected, of
// all ("5/6"), or "no claim" for a program of the user's (compare --exec),
// whose runs no expectation judges.
func (r compareRow) ExpectedText() string {
	if r.Judged > 0 && r.NoClaim == r.Judged {
		return matrix.NoClaim
	}
	return fmt.Sprintf("%d/%d", r.AsExpected, r.Judged)
}

// Label is the row's name: the backend, with the fencing mode when set.
func (r compareRow) Label() string {
	if r.Fencing != "" {
		return r.Backend + " + fencing " + r.Fencing
	}
	return r.Backend
}

// comparison is a comparison's table: rows of backends, columns of
// families.
type comparison struct {
	Families []string
	Rows     []compareRow
}

// buildComparison groups a matrix's cells into the comparison table.
func buildComparison(m *matrix.Matrix) comparison {
	var fams []string
	for _, f := range scenarios.Families {
		if slices.Contains(m.Scenarios, f) {
			fams = append(fams, f)
		}
	}
	for _, s := range m.Scenarios {
		// A family's other scenarios (failover-leader) fill its column.
		if f := scenarios.FamilyOf(s); s != baselineScenario && !slices.Contains(fams, f) {
			fams = append(fams, f)
		}
	}
	type rk struct{ b, f string }
	rows := map[rk]*compareRow{}
	var order []rk
	row := func(b, f string) *compareRow {
		k := rk{b, f}
		if r, ok := rows[k]; ok {
			return r
		}
		r := &compareRow{Backend: b, Fencing: f, Cells: make([]compareCell, len(fams))}
		rows[k] = r
		order = append(order, k)
		return r
	}
	for _, b := range m.Backends {
		row(b, "")
	}
	var base = map[rk][]matrix.Cell{}
	for _, c := range m.Cells {
		r := row(c.Backend, c.Fencing)
		if r.Library == nil {
			r.Library = c.Library
		}
		r.Judged++
		if c.Expected == matrix.NoClaim {
			r.NoClaim++
		}
		if c.AsExpected {
			r.AsExpected++
		}
		if c.Scenario == baselineScenario {
			base[rk{c.Backend, c.Fencing}] = append(base[rk{c.Backend, c.Fencing}], c)
			continue
		}
		if j := slices.Index(fams, scenarios.FamilyOf(c.Scenario)); j >= 0 {
			r.Cells[j].Runs = append(r.Cells[j].Runs, c)
		}
	}
	for _, s := range m.Skipped {
		j := slices.Index(fams, scenarios.FamilyOf(s.Scenario))
		if j < 0 {
			continue
		}
		for k, r := range rows {
			// A fenced row does not run where its plain row does not.
			if k.b == s.Backend && len(r.Cells[j].Runs) == 0 {
				r.Cells[j].NotRun = s.Why
			}
		}
	}
	for k, cs := range base {
		r := rows[k]
		var cyc []float64
		var p50, p99 []int64
		for _, c := range cs {
			if c.Verdict == matrix.VerdictError || c.Verdict == matrix.VerdictMissing {
				continue
			}
			cyc, p50, p99 = append(cyc, c.HoldsPerSecond), append(p50, c.AcquireP50), append(p99, c.AcquireP99)
		}
		if len(cyc) > 0 {
			r.Speed = true
			r.Cycles, r.P50, r.P99 = median(cyc), median(p50), median(p99)
		}
	}
	// Backends in the matrix's order, each followed by its fenced row.
	sort.SliceStable(order, func(a, b int) bool {
		ia, ib := slices.Index(m.Backends, order[a].b), slices.Index(m.Backends, order[b].b)
		if ia != ib {
			return ia < ib
		}
		return order[a].f < order[b].f
	})
	out := comparison{Families: fams}
	for _, k := range order {
		r := rows[k]
		if k.f != "" || r.Judged > 0 || hasNotRun(r) {
			out.Rows = append(out.Rows, *r)
		}
	}
	return out
}

func hasNotRun(r *compareRow) bool {
	for _, c := range r.Cells {
		if c.NotRun != "" {
			return true
		}
	}
	return false
}

// median of a non-empty slice (the lower middle for an even count).
func median[T int64 | float64](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// Class says what happened to safety in the cell's runs.
func (c compareCell) Class() string {
	if len(c.Runs) == 0 {
		return classNotRun
	}
	t := c.totals()
	switch {
	case t.missing > 0:
		return classMissing
	case t.errs > 0:
		return classError
	case t.StaleHolders+t.DoubleGrants+t.LostUpdates+t.StaleWrites == 0 && t.unknown > 0:
		return classUnknown
	case t.StaleWrites > 0 || t.LostUpdates > 0:
		return classUnsafe
	case t.StaleHolders+t.DoubleGrants > 0 && t.fenced:
		return classFenced
	case t.StaleHolders+t.DoubleGrants > 0:
		return classUnsafe
	}
	return classSafe
}

// cellTotals sums a cell's runs (like runs: the seeds of one pair).
type cellTotals struct {
	matrix.Safety
	errs, missing, unknown, unsafeRuns int
	fenced                             bool
}

func (c compareCell) totals() cellTotals {
	var t cellTotals
	for _, r := range c.Runs {
		switch r.Verdict {
		case matrix.VerdictError:
			t.errs++
			continue
		case matrix.VerdictMissing:
			t.missing++
			continue
		case "unknown":
			t.unknown++
		}
		t.fenced = t.fenced || r.Fencing != ""
		if s := r.Safety; s != nil {
			t.StaleHolders += s.StaleHolders
			t.DoubleGrants += s.DoubleGrants
			t.StaleWrites += s.StaleWrites
			t.RejectedStale += s.RejectedStale
			t.LostUpdates += s.LostUpdates
			if s.StaleHolders+s.DoubleGrants+s.StaleWrites+s.LostUpdates > 0 {
				t.unsafeRuns++
			}
		}
	}
	return t
}

// Summary is the cell's words: safe; unsafe with its counts; stale
// holders whose every stale write fencing rejected; not run.
func (c compareCell) Summary() string {
	t := c.totals()
	n := len(c.Runs)
	switch c.Class() {
	case classNotRun:
		return "not run"
	case classMissing:
		return fmt.Sprintf("missing: no shard ran it (%d of %d runs)", t.missing, n)
	case classError:
		return fmt.Sprintf("harness error (%d of %d runs)", t.errs, n)
	case classUnknown:
		return fmt.Sprintf("unknown (%d of %d runs)", t.unknown, n)
	case classSafe:
		return "safe"
	case classFenced:
		if t.RejectedStale == 0 {
			return fmt.Sprintf("%s, no stale write reached the resource", holderWords(t))
		}
		return fmt.Sprintf("%s, every stale write rejected by fencing (%d)", holderWords(t), t.RejectedStale)
	}
	var parts []string
	for _, p := range []struct {
		n         int
		one, many string
	}{{t.StaleHolders, "stale holder", "stale holders"}, {t.DoubleGrants, "double grant", "double grants"},
		{t.LostUpdates, "lost update", "lost updates"}, {t.StaleWrites, "stale write accepted", "stale writes accepted"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, words.Noun(p.n, p.one, p.many)))
		}
	}
	return fmt.Sprintf("unsafe: %s (%d/%d runs)", strings.Join(parts, ", "), t.unsafeRuns, n)
}

// holderWords counts stale holders and double grants.
func holderWords(t cellTotals) string {
	var parts []string
	if t.StaleHolders > 0 {
		parts = append(parts, fmt.Sprintf("%d %s", t.StaleHolders, words.Noun(t.StaleHolders, "stale holder", "stale holders")))
	}
	if t.DoubleGrants > 0 {
		parts = append(parts, fmt.Sprintf("%d %s", t.DoubleGrants, words.Noun(t.DoubleGrants, "double grant", "double grants")))
	}
	return strings.Join(parts, " and ")
}

// RecoveryText is the median recovery after the faults over the cell's
// runs, or "" when none was measured.
func (c compareCell) RecoveryText() string {
	var ns []int64
	none := 0
	for _, r := range c.Runs {
		if r.Recovery == nil {
			continue
		}
		if !r.Recovery.Granted {
			none++
			continue
		}
		ns = append(ns, r.Recovery.NS)
	}
	switch {
	case len(ns) == 0 && none == 0:
		return ""
	case len(ns) == 0:
		return "no grant after the fault"
	}
	s := "recovery " + shortDuration(time.Duration(median(ns)))
	if none > 0 {
		s += fmt.Sprintf(" (%d runs: no grant after)", none)
	}
	return s
}

// EitherWhy says why the cell's runs were expected to come out valid or
// invalid, either (scenarios.Either: the lock's claim leaves it open), or
// "" when they were held to one verdict.
func (c compareCell) EitherWhy() string {
	for _, r := range c.Runs {
		if r.Expected == scenarios.Either {
			if r.ExpectedWhy == "" {
				return "the lock's claim leaves it open"
			}
			return r.ExpectedWhy
		}
	}
	return ""
}

// Expected counts the cell's runs as expected.
func (c compareCell) Expected() (ok, n int) {
	for _, r := range c.Runs {
		if r.AsExpected {
			ok++
		}
	}
	return ok, len(c.Runs)
}

// Known names the known findings (Cell.KnownFinding) that explain the
// cell's runs NOT as expected, each once, in the runs' order.
func (c compareCell) Known() []string {
	var ids []string
	for _, r := range c.Runs {
		if r.KnownFinding != "" && !slices.Contains(ids, r.KnownFinding) {
			ids = append(ids, r.KnownFinding)
		}
	}
	return ids
}

// knownText is " known finding ID" for a cell a known finding explains, or "".
func (c compareCell) knownText() string {
	if ids := c.Known(); len(ids) > 0 {
		return " known finding " + strings.Join(ids, ", ")
	}
	return ""
}

// shortDuration rounds for a table: 0s, 12ms, 1.25s.
func shortDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(10 * time.Millisecond).String()
}

// speedText is a row's no-fault speed.
func (r compareRow) speedText() (cycles, p50, p99 string) {
	if !r.Speed {
		return "-", "-", "-"
	}
	return fmt.Sprintf("%.1f/s", r.Cycles), shortDuration(time.Duration(r.P50)), shortDuration(time.Duration(r.P99))
}

// CompareTable is the comparison as plain text (compare.txt, and what
// the CLI prints): one line per backend, one column per family.
func CompareTable(m *matrix.Matrix) string {
	cmp := buildComparison(m)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	hdr := []string{"BACKEND", "CYCLES", "P50", "P99"}
	for _, f := range cmp.Families {
		hdr = append(hdr, strings.ToUpper(f))
	}
	hdr = append(hdr, "AS EXPECTED")
	fmt.Fprintln(tw, strings.Join(hdr, "\t"))
	for _, r := range cmp.Rows {
		cyc, p50, p99 := r.speedText()
		cols := []string{r.Label(), cyc, p50, p99}
		for _, c := range r.Cells {
			cols = append(cols, c.Short())
		}
		cols = append(cols, r.ExpectedText())
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	tw.Flush()
	// The rows that are libraries, with the version each ran.
	first := true
	for _, r := range cmp.Rows {
		if r.Fencing != "" || r.Library == nil {
			continue
		}
		if first {
			b.WriteString("LIBRARIES:\n")
			first = false
		}
		fmt.Fprintf(&b, "  %s: %s\n", r.Backend, r.LibraryText())
	}
	// The cells expected valid or invalid, either, each with why.
	first = true
	for _, r := range cmp.Rows {
		for j, c := range r.Cells {
			why := c.EitherWhy()
			if why == "" {
				continue
			}
			if first {
				b.WriteString("EITHER VERDICT EXPECTED (valid or invalid; the lock's claim leaves it open):\n")
				first = false
			}
			fmt.Fprintf(&b, "  %s, %s: %s\n", r.Label(), cmp.Families[j], why)
		}
	}
	b.WriteString(strings.TrimRight(matrixTotals(m), "\n") + "\n")
	return b.String()
}

// Short is the cell in a few words, for the text table: safe, UNSAFE with
// its counts (sh stale holders, dg double grants, lu lost updates, sw
// stale writes accepted), FENCED (stale holders, every stale write
// rejected), the median recovery, and [either] when the cell is expected
// valid or invalid, either (the reason below the table).
func (c compareCell) Short() string {
	t := c.totals()
	var s string
	switch c.Class() {
	case classNotRun:
		return "not run"
	case classMissing:
		return fmt.Sprintf("MISSING %d/%d", t.missing, len(c.Runs))
	case classError:
		return fmt.Sprintf("ERROR %d/%d", t.errs, len(c.Runs))
	case classUnknown:
		s = "unknown"
	case classSafe:
		s = "safe"
	case classFenced:
		s = "FENCED"
		if t.StaleHolders > 0 {
			s += fmt.Sprintf(" sh%d", t.StaleHolders)
		}
		if t.DoubleGrants > 0 {
			s += fmt.Sprintf(" dg%d", t.DoubleGrants)
		}
		s += fmt.Sprintf(" rej%d", t.RejectedStale)
	default:
		var parts []string
		for _, p := range []struct {
			n    int
			what string
		}{{t.StaleHolders, "sh"}, {t.DoubleGrants, "dg"}, {t.LostUpdates, "lu"}, {t.StaleWrites, "sw"}} {
			if p.n > 0 {
				parts = append(parts, fmt.Sprintf("%s%d", p.what, p.n))
			}
		}
		s = fmt.Sprintf("UNSAFE %s (%d/%d)", strings.Join(parts, " "), t.unsafeRuns, len(c.Runs))
	}
	if rt := c.RecoveryText(); rt != "" {
		s += ", " + strings.TrimPrefix(rt, "recovery ")
	}
	if c.EitherWhy() != "" {
		s += " [either]"
	}
	if ok, n := c.Expected(); ok < n {
		s += fmt.Sprintf(" [NOT AS EXPECTED %d/%d%s]", n-ok, n, c.knownText())
	}
	return s
}

// CompareLegend explains the text table's abbreviations.
const CompareLegend = "sh stale holders · dg double grants · lu lost updates · sw stale writes accepted · rej stale writes rejected by fencing · FENCED: stale holders, yet no stale write accepted and no update lost · time: median recovery (from the fault's end to the next grant) · counts summed over the seeds (runs unsafe/runs) · [either]: valid or invalid, either as expected (why: below the table)\n"
