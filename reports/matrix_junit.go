package reports

import (
	"encoding/xml"
	"fmt"
	"path"
	"strings"

	"github.com/locktorture/locktorture/matrix"
)

// matrixJUnit renders one testsuite per scenario with one testcase per
// cell (named by its backend, and seed when there are several): a
// <failure> when the verdict differs from its expectation, an <error> when
// the run failed with a harness error or no shard ran it.
func matrixJUnit(m *matrix.Matrix) ([]byte, error) {
	doc := junitSuites{Name: "locktorture matrix " + m.Started}
	idx := map[string]int{}
	for _, c := range m.Cells {
		i, ok := idx[c.Scenario]
		if !ok {
			i = len(doc.Suites)
			idx[c.Scenario] = i
			s := junitSuite{Name: "locktorture/matrix/" + c.Scenario}
			for _, p := range [][2]string{{"started", m.Started}, {"shard", m.Shard}, {"command", m.Command}} {
				if p[1] != "" {
					s.Properties = append(s.Properties, junitProperty{p[0], xmlSafe(p[1])})
				}
			}
			doc.Suites = append(doc.Suites, s)
		}
		s := &doc.Suites[i]
		name := c.Backend
		if m.Seeds > 1 {
			name = fmt.Sprintf("%s seed %d", c.Backend, c.Seed)
		}
		tc := junitCase{Name: name, Classname: "locktorture.matrix." + c.Scenario, Time: fmt.Sprintf("%.3f", c.Seconds)}
		var out []string
		if c.Headline != "" {
			out = append(out, c.Headline)
		}
		out = append(out, fmt.Sprintf("verdict %s, expected %s", c.Verdict, c.Expected))
		if c.Dir != "" {
			out = append(out, "report: "+path.Join(c.Dir, FileIndex))
		}
		tc.SystemOut = junitOut(strings.Join(out, "\n"))
		switch {
		case c.AsExpected:
		case c.Verdict == matrix.VerdictError:
			tc.Error = &junitMessage{Message: xmlSafe(truncate(oneLine("harness error: "+c.Error), 300)), Type: "harness", Text: xmlSafe(c.Error)}
			s.Errors++
		case c.Verdict == matrix.VerdictMissing:
			tc.Error = &junitMessage{Message: "no shard ran this cell", Type: "missing", Text: c.Why}
			s.Errors++
		case c.KnownFinding != "":
			// The claim stands as the expectation; the contradiction is a
			// known finding: said, not failed (only something new fails).
			tc.Skipped = &junitMessage{Message: xmlSafe("NOT as expected, known finding " + c.KnownFinding + ": " + c.Why), Type: "known-finding"}
		default:
			tc.Failure = &junitMessage{Message: xmlSafe(c.Why), Type: "verdict", Text: xmlSafe(strings.Join(out, "\n"))}
			s.Failures++
		}
		s.Cases = append(s.Cases, tc)
		s.Tests++
		s.seconds += c.Seconds
	}
	for i := range doc.Suites {
		s := &doc.Suites[i]
		s.Time = fmt.Sprintf("%.3f", s.seconds)
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
	}
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode junit: %w", err)
	}
	return append(append([]byte(xml.Header), b...), '\n'), nil
}
