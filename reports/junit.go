package reports

import (
	"encoding/xml"
	"fmt"
	"strings"

	"github.com/locktorture/locktorture/checker"
)

// JUnit XML, as Jenkins, GitLab and GitHub test reporters read it.
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Skipped  int          `xml:"skipped,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name       string          `xml:"name,attr"`
		Tests      int             `xml:"tests,attr"`
		Failures   int             `xml:"failures,attr"`
		Errors     int             `xml:"errors,attr"`
		Skipped    int             `xml:"skipped,attr"`
		Time       string          `xml:"time,attr"`
		Properties []junitProperty `xml:"properties>property,omitempty"`
		Cases      []junitCase     `xml:"testcase"`
		SystemOut  *junitText      `xml:"system-out,omitempty"`
		seconds    float64         // summed into Time
	}
	junitProperty struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		Time      string        `xml:"time,attr"`
		Failure   *junitMessage `xml:"failure,omitempty"`
		Error     *junitMessage `xml:"error,omitempty"`
		// Skipped marks a cell a known finding explains: not a failure
		// (nothing new), said.
		Skipped   *junitMessage `xml:"skipped,omitempty"`
		SystemOut *junitText    `xml:"system-out,omitempty"`
	}
	junitMessage struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr,omitempty"`
		Text    string `xml:",cdata"`
	}
	junitText struct {
		Text string `xml:",cdata"`
	}
)

// xmlSafe drops the characters XML 1.0 cannot carry at all.
func xmlSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20, r == 0xFFFE, r == 0xFFFF, r >= 0xD800 && r <= 0xDFFF:
			return -1
		}
		return r
	}, s)
}

func junitOut(s string) *junitText {
	if s == "" {
		return nil
	}
	return &junitText{xmlSafe(s)}
}

// junitXML renders one testsuite with one testcase per checker that ran:
// an invalid checker is a <failure> listing its violations, an unknown one
// an <error> saying why (an undecided check must not pass CI silently).
func junitXML(res *checker.Results, info RunInfo) ([]byte, error) {
	scenario := first(info.Scenario, res.Scenario, "run")
	backend := first(info.Backend, res.Backend, "backend")
	suite := junitSuite{
		Name: "locktorture/" + scenario + "/" + backend,
		Time: "0",
	}
	class := "locktorture." + scenario + "." + backend
	props := [][2]string{
		{"scenario", scenario}, {"backend", backend}, {"resource", first(info.Resource, res.Resource)},
		{"fencing", info.Fencing}, {"seed", fmt.Sprint(first(info.Seed, res.Seed))},
		{"verdict", res.Valid.String()}, {"expected", info.Expected}, {"command", info.Command},
	}
	for _, p := range props {
		if p[1] != "" {
			suite.Properties = append(suite.Properties, junitProperty{p[0], p[1]})
		}
	}
	groups := violationGroups(&res.Checkers)
	for _, l := range checkerLines(&res.Checkers) {
		tc := junitCase{Name: l.name, Classname: class, Time: "0", SystemOut: junitOut(l.detail)}
		switch l.verdict {
		case checker.Invalid:
			var body []string
			for _, g := range groups {
				if g.checker != l.name || strings.Contains(g.title, "rejected") {
					continue
				}
				n := min(len(g.texts), 100)
				body = append(body, g.texts[:n]...)
				if g.total > n {
					body = append(body, fmt.Sprintf("… and %d more (see results.json)", g.total-n))
				}
			}
			if l.err != "" {
				body = append(body, "error: "+l.err)
			}
			if len(body) == 0 {
				body = append(body, l.detail)
			}
			if l.name == checker.NameLinearizable {
				body = append(body, "see "+FileLinearizability+" for porcupine's view")
			}
			tc.Failure = &junitMessage{Message: xmlSafe(l.name + " invalid: " + l.detail), Type: "invalid", Text: xmlSafe(strings.Join(body, "\n"))}
			suite.Failures++
		case checker.Unknown:
			why := l.detail
			if l.err != "" {
				why = l.err
			}
			tc.Error = &junitMessage{Message: xmlSafe(l.name + " unknown: " + why), Type: "unknown", Text: xmlSafe(l.detail)}
			suite.Errors++
		}
		suite.Cases = append(suite.Cases, tc)
		suite.Tests++
	}
	suite.SystemOut = junitOut(first(info.Summary, Summary(res, 20)))
	for i, p := range suite.Properties {
		suite.Properties[i].Value = xmlSafe(p.Value)
	}
	doc := junitSuites{Name: "locktorture", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors, Suites: []junitSuite{suite}}
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode junit: %w", err)
	}
	return append(append([]byte(xml.Header), b...), '\n'), nil
}

// first returns the first non-zero value.
func first[T comparable](vs ...T) T {
	var zero T
	for _, v := range vs {
		if v != zero {
			return v
		}
	}
	return zero
}
