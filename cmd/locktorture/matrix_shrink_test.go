package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMatrixShrink: `matrix --shrink` shrinks the invalid cell that came
// from random faults and leaves its shrunk.yaml in the cell's run; the
// matrix's exit code stays its verdicts'.
func TestMatrixShrink(t *testing.T) {
	requireRedis(t)
	sc := filepath.Join(t.TempDir(), "rnd-pause.yaml")
	if err := os.WriteFile(sc, []byte(`name: rnd-pause
backend: redis-token
backends: [redis-token]
clients: 2
keys: 1
ttl: 300ms
hold: 50ms
duration: 2s
timeout: 200ms
seed: 5
nemesis:
  random: {faults: [pause], interval: 500ms, min: 400ms, max: 600ms}
expect:
  valid: invalid
`), 0o644); err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	code, out, stderr := runCLI(t, "matrix", "--scenarios", sc, "--store", store, "--shrink", "--quiet")
	if code != exitValid {
		t.Fatalf("exit %d, want 0 (the cell is invalid as expected)\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "shrinking rnd-pause / redis-token (seed 5)") || !strings.Contains(out, "shrunk.yaml") {
		t.Fatalf("stdout does not show the shrink:\n%s\n%s", out, stderr)
	}
	got, _ := filepath.Glob(filepath.Join(store, "rnd-pause", "redis-token", "*", "shrunk.yaml"))
	if len(got) != 1 {
		t.Fatalf("shrunk.yaml in the cell's run: %v", got)
	}
}
