package clientprotocol

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/internal/testenv"
)

// requirePythonRedis skips (or, under CI, fails) unless /usr/bin/python3
// can import redis (Debian's python3-redis).
func requirePythonRedis(t *testing.T) {
	t.Helper()
	testenv.Require(t, "redis-server")
	if err := exec.Command("/usr/bin/python3", "-c", "import redis").Run(); err != nil {
		testenv.Missing(t, "python3-redis")
	}
}

// TestClientCheck drives a good adapter (the shipped redis-py try-lock
// adapter: the positive control) and four adapters broken on purpose
// through client-check against a real redis-server: each broken one is
// flagged for its own rule, in words, and the good one for none.
func TestClientCheck(t *testing.T) {
	requirePythonRedis(t)
	broken := filepath.Join("testdata", "broken_adapter.py")
	cases := []struct {
		name    string
		command []string
		rules   []string // broken rules expected (all of them)
		says    string   // in the first broken finding
	}{
		{"good", []string{"/usr/bin/python3", filepath.Join("..", "clients", "python", "redis_py_try_lock.py")}, nil, ""},
		{"fail on a timeout", []string{"/usr/bin/python3", broken, "fail-on-timeout"}, []string{"timeout is info"}, "never fail"},
		{"keeps a late grant", []string{"/usr/bin/python3", broken, "keep-late-grant"}, []string{"late grant", "answer every request"}, "kept the lock"},
		{"never answers close", []string{"/usr/bin/python3", broken, "no-close"}, []string{"close", "exit after close"}, "answer ok, then exit"},
		{"ignores stdin EOF", []string{"/usr/bin/python3", broken, "ignore-eof"}, []string{"stdin closed"}, "when stdin ends, exit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := Check(context.Background(), CheckOptions{Command: c.command, Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, f := range rep.Broken() {
				got[f.Rule] = true
			}
			if len(got) != len(c.rules) {
				t.Fatalf("broken rules %v, want %v:\n%s", got, c.rules, rep.Text())
			}
			for _, r := range c.rules {
				if !got[r] {
					t.Fatalf("rule %q not flagged:\n%s", r, rep.Text())
				}
			}
			if c.says != "" && !strings.Contains(rep.Broken()[0].Says, c.says) {
				t.Errorf("finding %q does not say %q", rep.Broken()[0].Says, c.says)
			}
			if !slices.ContainsFunc(rep.Findings, func(f Finding) bool { return f.Rule == "late grant" }) {
				t.Errorf("the late-grant rule has no line of its own:\n%s", rep.Text())
			}
			// Not put to the test: the line says what the slow and cut
			// acquires got, so a reader can tell it from a grant unseen.
			for _, f := range rep.Findings {
				if f.Rule == "late grant" && strings.Contains(f.Says, "not put to the test") && (!strings.Contains(f.Says, "delayed by") || !strings.Contains(f.Says, "cut: ")) {
					t.Errorf("late grant not put to the test, and not said what was seen: %q", f.Says)
				}
			}
			if len(rep.Findings) < 10 {
				t.Errorf("only %d rules checked:\n%s", len(rep.Findings), rep.Text())
			}
		})
	}
}
