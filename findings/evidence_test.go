package findings

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/scenarios"
)

// TestEvidence: every finding is classed (defect, limitation, gap) with
// upstream's words, a link pinned to the version tested, and its known
// reports or what was searched; it stands against its row's claim exactly
// when its class says the claim promised otherwise (a defect or a gap),
// not when the claim concedes it (a limitation); and docs/findings.md's
// section for it names its class and quotes its words as they are here,
// so the docs and the code cannot drift apart.
func TestEvidence(t *testing.T) {
	b, err := os.ReadFile("../docs/findings.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := docSections(string(b))
	if len(evidence) != len(registry) {
		t.Errorf("%d findings have evidence, the registry has %d", len(evidence), len(registry))
	}
	unpinned := regexp.MustCompile(`/(latest|main|master|current|stable)(/|$)`)
	for _, f := range All() {
		ev, ok := evidence[f.ID]
		if !ok {
			t.Errorf("%s: no evidence", f.ID)
			continue
		}
		switch ev.Class {
		case Defect, Gap:
			if !f.AgainstClaim {
				t.Errorf("%s: a %s (the claim promised otherwise) whose scenario does not keep the claim as its expectation (AgainstClaim unset)", f.ID, ev.Class)
			}
		case Limitation:
			if f.AgainstClaim {
				t.Errorf("%s: a limitation (the claim concedes it) marked against the claim", f.ID)
			}
		default:
			t.Errorf("%s: class %q, want defect, limitation or gap", f.ID, ev.Class)
		}
		if strings.TrimSpace(ev.Words) == "" || strings.Contains(ev.Words, "\n") {
			t.Errorf("%s: words %q: want upstream's words, on one line", f.ID, ev.Words)
		}
		if !strings.HasPrefix(ev.Source, "https://") || unpinned.MatchString(ev.Source) {
			t.Errorf("%s: source %q: want a link at the version tested", f.ID, ev.Source)
		}
		if len(ev.Reports) == 0 && strings.TrimSpace(ev.Searched) == "" {
			t.Errorf("%s: neither known reports nor what was searched", f.ID)
		}
		for _, r := range ev.Reports {
			if !strings.HasPrefix(r, "https://") {
				t.Errorf("%s: report %q does not start with its link", f.ID, r)
			}
		}
		if strings.TrimSpace(ev.Tuned) == "" {
			t.Errorf("%s: no word on what the set-up tunes (say so when nothing is)", f.ID)
		}
		sec, ok := sections[f.ID]
		if !ok {
			t.Errorf("%s: no section in docs/findings.md", f.ID)
			continue
		}
		if want := "**Class**: " + string(ev.Class); !strings.Contains(sec, want) {
			t.Errorf("%s: docs/findings.md's section does not say %q", f.ID, want)
		}
		if !strings.Contains(normalise(sec), normalise(ev.Words)) {
			t.Errorf("%s: docs/findings.md's section does not quote its words: %q", f.ID, ev.Words)
		}
		if !strings.Contains(sec, ev.Source) {
			t.Errorf("%s: docs/findings.md's section does not link %s", f.ID, ev.Source)
		}
	}
}

// TestCompareQuotesTheClaims: docs/compare.md, where each row's
// expectation is its claim, quotes the words that decide every finding
// shown in a comparison (its scenario, or a cell it covers, is a family's)
// or about a library row (a Go module), as findings/evidence.go has them:
// a defect's or a gap's claim is the expectation its cells contradict, a
// limitation's warning the one its cells concede.
func TestCompareQuotesTheClaims(t *testing.T) {
	b, err := os.ReadFile("../docs/compare.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := normalise(string(b))
	inCompare := func(f Finding) bool {
		if f.Module != "" || slices.Contains(scenarios.Families, scenarios.FamilyOf(f.Scenario)) {
			return true
		}
		for _, c := range f.Also {
			if slices.Contains(scenarios.Families, scenarios.FamilyOf(c.Scenario)) {
				return true
			}
		}
		return false
	}
	n := 0
	for _, f := range All() {
		if !inCompare(f) {
			continue
		}
		n++
		if w := evidence[f.ID].Words; !strings.Contains(doc, normalise(w)) {
			t.Errorf("%s: docs/compare.md does not quote its row's words: %q", f.ID, w)
		}
	}
	if n == 0 {
		t.Error("no finding is in a comparison")
	}
}

// TestDocSections: the docs are cut at each "## " heading, a section
// running to the next heading of level 1 or 2.
func TestDocSections(t *testing.T) {
	got := docSections("# Top\nintro\n## a\none\n### sub\ntwo\n## b\nthree\n# Fixed\nfour\n")
	want := map[string]string{"a": "one\n### sub\ntwo\n", "b": "three\n"}
	if len(got) != len(want) {
		t.Fatalf("sections %q, want %q", got, want)
	}
	for id, s := range want {
		if got[id] != s {
			t.Errorf("section %s: %q, want %q", id, got[id], s)
		}
	}
	if n := normalise(" a\n  b\tc "); n != "a b c" {
		t.Errorf("normalise: %q", n)
	}
}

// docSections cuts a markdown page into its "## id" sections by id, each
// to the next heading of level 1 or 2.
func docSections(doc string) map[string]string {
	out := map[string]string{}
	id, body := "", strings.Builder{}
	flush := func() {
		if id != "" {
			out[id] = body.String()
		}
		id = ""
		body.Reset()
	}
	for _, line := range strings.SplitAfter(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			flush()
			id = strings.TrimSpace(strings.TrimPrefix(line, "## "))
		case strings.HasPrefix(line, "# "):
			flush()
		default:
			if id != "" {
				body.WriteString(line)
			}
		}
	}
	flush()
	return out
}

// normalise folds every run of white space into one space.
func normalise(s string) string { return strings.Join(strings.Fields(s), " ") }
