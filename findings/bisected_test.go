package findings

import (
	"os"
	"strings"
	"testing"
)

// TestBisected: every finding on a Go library has been bisected (its
// first version recorded, with how), only those, and docs/bisect.md has
// each one's table.
func TestBisected(t *testing.T) {
	doc, err := os.ReadFile("../docs/bisect.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range All() {
		v, how := FirstVersion(f.ID)
		if f.Module == "" {
			if v != "" {
				t.Errorf("%s: a Debian package's finding has a bisected version %q", f.ID, v)
			}
			continue
		}
		if !strings.HasPrefix(v, "v") || how == "" {
			t.Errorf("%s (%s): first version %q, how %q: want both (locktorture bisect %s)", f.ID, f.Module, v, how, f.ID)
		}
		if !strings.Contains(string(doc), f.ID) {
			t.Errorf("docs/bisect.md does not name %s", f.ID)
		}
	}
	for id := range bisected {
		if _, err := Lookup(id); err != nil {
			t.Errorf("bisected: %v", err)
		}
	}
}
