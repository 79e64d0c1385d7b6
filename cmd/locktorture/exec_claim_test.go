package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/internal/testenv"
)

// TestCompareNodeRowsJudgedByClaim: programs of the user's (the Node.js
// kit's adapters) are rows of one comparison with their own servers and
// claims. The renewing Redis lock claimed stale-holder-possible and the
// PostgreSQL session lock claimed safe come out as claimed under pause
// (exit 0); the same Redis lock claimed safe is caught by pause's stale
// holder (exit 1, its cell NOT AS EXPECTED) — the claim, not the run,
// decides the expectation.
func TestCompareNodeRowsJudgedByClaim(t *testing.T) {
	testenv.Require(t, "redis-server", "postgres")
	run := filepath.Join("..", "..", "clients", "node", "run.sh")
	for _, lib := range []struct{ script, pkg string }{{"redis-lock.js", "node-redis"}, {"pg-lock.js", "node-pg"}} {
		c := exec.Command(run, lib.script)
		var stderr strings.Builder
		c.Stderr = &stderr
		if err := c.Run(); err != nil {
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() == 69 {
				testenv.Missing(t, lib.pkg+" ("+strings.TrimSpace(stderr.String())+")")
			}
			testenv.Missing(t, "nodejs ("+err.Error()+")")
		}
	}
	base := []string{"compare", "--families", "pause", "--backends", "redis-token", "--seeds", "1",
		"--exec", "node-redis=" + run + " redis-lock.js", "--exec", "node-pg=" + run + " pg-lock.js", "--exec-servers", "node-pg=postgres"}
	for _, tc := range []struct {
		redisClaim string
		code       int
		want       []string
	}{
		{"stale-holder-possible", exitValid, []string{"AS EXPECTED: 6 as expected"}},
		{"safe", exitInvalid, []string{"[NOT AS EXPECTED 1/1]", "1 NOT as expected"}},
	} {
		args := append(append([]string{}, base...), "--store", t.TempDir(), "--exec-claim", "node-redis="+tc.redisClaim, "--exec-claim", "node-pg=safe")
		code, out, stderr := runCLI(t, args...)
		if code != tc.code {
			t.Fatalf("claim %s: exit %d, want %d\n%s\n%s", tc.redisClaim, code, tc.code, out, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("claim %s: output lacks %q:\n%s", tc.redisClaim, w, out)
			}
		}
		// node-pg keeps its session lock through the pause: safe, as claimed.
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "node-pg ") && (!strings.Contains(l, "safe") || strings.Contains(l, "NOT AS EXPECTED")) {
				t.Errorf("claim %s: node-pg's row %q, want safe as claimed", tc.redisClaim, l)
			}
		}
	}
}
