package reports

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/locktorture/locktorture/internal/words"
	"github.com/locktorture/locktorture/matrix"
)

// Names of the files a matrix directory (store/matrix/<timestamp>/) holds,
// besides index.html, results.json and junit.xml.
const (
	FileMatrixPNG = "matrix.png"
)

// WriteMatrix writes a matrix's report into dir (created if missing):
// results.json, index.html (the verdict grid, each cell linking to its
// run), matrix.png (the grid and per-backend bars) and junit.xml (one
// testcase per cell). m is finished first (see Finish). Like WriteRun, a
// file that cannot be made does not stop the others. The files depend on m
// alone, so writing them again from the same results.json gives the same
// bytes.
func WriteMatrix(ctx context.Context, dir string, m *matrix.Matrix) error {
	if m == nil {
		return fmt.Errorf("%w: no matrix", matrix.ErrMatrix)
	}
	m.Finish()
	if err := matrix.Write(dir, m); err != nil {
		return err
	}
	w := &fileWriter{ctx: ctx, dir: dir}
	w.write(FileMatrixPNG, func() ([]byte, error) { return matrixPNG(m) })
	w.write(FileJUnit, func() ([]byte, error) { return matrixJUnit(m) })
	w.write(FileIndex, func() ([]byte, error) { return matrixHTML(m) })
	if m.Compare {
		w.write(FileCompareHTML, func() ([]byte, error) { return compareHTML(m) })
		w.write(FileComparePNG, func() ([]byte, error) { return comparePNG(m) })
		w.write(fileCompareText, func() ([]byte, error) { return []byte(CompareTable(m) + CompareLegend), nil })
	}
	return w.err()
}

// MatrixTable is the plain-text table the CLI prints after a matrix: one
// line per cell with its verdict, expectation and whether they match, then
// a total line.
func MatrixTable(m *matrix.Matrix) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	versions := len(m.Versions) > 0
	if versions {
		fmt.Fprintln(tw, "SCENARIO\tBACKEND\tVERSION\tSERVERS\tSEED\tVERDICT\tEXPECTED\tRESULT\tTIME")
	} else {
		fmt.Fprintln(tw, "SCENARIO\tBACKEND\tSEED\tVERDICT\tEXPECTED\tRESULT\tTIME")
	}
	for _, c := range m.Cells {
		res := "ok"
		switch {
		case c.Verdict == matrix.VerdictError:
			res = "ERROR: " + truncate(oneLine(c.Error), 80)
		case c.Verdict == matrix.VerdictMissing:
			res = "MISSING"
		case !c.AsExpected && c.KnownFinding != "":
			res = "DIFFERS, known finding " + c.KnownFinding + ": " + c.Why
		case !c.AsExpected:
			res = "DIFFERS: " + c.Why
		}
		if versions {
			sv := c.ServerVersionText()
			if sv == "" {
				sv = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%.1fs\n", c.Scenario, c.Backend, c.Version, sv, c.Seed, c.Verdict, c.Expected, res, c.Seconds)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%.1fs\n", c.Scenario, c.Backend, c.Seed, c.Verdict, c.Expected, res, c.Seconds)
	}
	tw.Flush()
	if versions {
		for _, s := range m.Skipped {
			if s.Version != "" {
				fmt.Fprintf(&b, "%s / %s @ %s: %s\n", s.Scenario, s.Backend, s.Version, s.Why)
			}
		}
		if diffs := versionDiffLines(m); len(diffs) > 0 {
			fmt.Fprintf(&b, "VERDICT DIFFERS BETWEEN VERSIONS (%d):\n", len(diffs))
			for _, d := range diffs {
				fmt.Fprintf(&b, "  %s\n", d)
			}
		} else {
			b.WriteString("every scenario/backend pair gives the same verdict with every version set\n")
		}
	}
	b.WriteString(matrixTotals(m))
	b.WriteByte('\n')
	return b.String()
}

// matrixTotals says in one line how the matrix came out, then a line for
// each known finding that did not show (Matrix.Stale).
func matrixTotals(m *matrix.Matrix) string {
	ok, differ, errs, missing := m.Counts()
	s := fmt.Sprintf("%s: %d as expected", strings.ToUpper(verdictWord(m)), ok)
	noClaim := 0
	for _, c := range m.Cells {
		if c.Expected == matrix.NoClaim && c.AsExpected {
			noClaim++
		}
	}
	if noClaim > 0 {
		s += fmt.Sprintf(", %d of them against no claim", noClaim)
	}
	if differ > 0 {
		s += fmt.Sprintf(", %d NOT as expected", differ)
		if k := m.Known(); k > 0 {
			s += fmt.Sprintf(" (%d of them a known finding: the row's claim stands as the expectation)", k)
		}
	}
	if errs > 0 {
		s += fmt.Sprintf(", %d harness %s", errs, words.Noun(errs, "error", "errors"))
	}
	if missing > 0 {
		s += fmt.Sprintf(", %d missing", missing)
	}
	s += fmt.Sprintf(" (%s", words.Count(len(m.Cells), "cell", "cells"))
	if len(m.Skipped) > 0 {
		s += fmt.Sprintf("; %d scenario/backend %s not applicable", len(m.Skipped), words.Noun(len(m.Skipped), "pair", "pairs"))
	}
	if m.Interrupted {
		s += "; interrupted"
	}
	s += ")"
	for _, id := range m.Stale() {
		s += fmt.Sprintf("\nFINDING %s DID NOT SHOW: every cell it covers came out as the row claims — fixed upstream? Check with `locktorture repro %s`, then move it to the record's fixed section (docs/findings.md)", id, id)
	}
	return s
}

// verdictWord is "as expected", "errors" or "differs" for the whole matrix.
func verdictWord(m *matrix.Matrix) string {
	switch {
	case m.Valid && m.Known() > 0:
		return "as expected but for known findings"
	case m.Valid:
		return "as expected"
	case m.HasErrors():
		return "harness errors"
	}
	return "not as expected"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
