package shell

import (
	"os/exec"
	"strings"
	"testing"
)

// TestQuoteRoundTrips: every word comes back whole from a real shell.
func TestQuoteRoundTrips(t *testing.T) {
	words := []string{"plain", "", "two words", "it's", `"dq"`, "$HOME", "a*b", "`id`", "x;y", "a\\b", "~root", "#c", "tab\there", "nl\nhere", "--seed=7", "ü"}
	for _, w := range words {
		out, err := exec.Command("sh", "-c", "printf %s "+quote(w)).Output()
		if err != nil {
			t.Fatalf("%q: %v", w, err)
		}
		if string(out) != w {
			t.Errorf("quote(%q) = %s came back as %q", w, quote(w), out)
		}
	}
	if got := Join([]string{"locktorture", "run", "--scenario-file", "my file.yaml"}); got != "locktorture run --scenario-file 'my file.yaml'" {
		t.Errorf("Join: %s", got)
	}
	if strings.Contains(quote("--seed=7"), "'") {
		t.Errorf("a plain flag was quoted: %s", quote("--seed=7"))
	}
}
