package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnalyzeMemoryLimit: the limit follows the ops a history holds (its
// lines), not only its bytes, with a floor; a path without a history has
// none.
func TestAnalyzeMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	line := `{"index":0,"time":1200,"process":0,"type":"invoke","f":"acquire","key":"k0"}` + "\n" // 78 bytes
	long := `{"index":0,"time":1,"process":-1,"type":"info","f":"start-pause","value":{"why":"` + strings.Repeat("x", 900) + `"}}` + "\n"
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	short := write("short.jsonl", strings.Repeat(line, 1_000_000))
	longs := write("long.jsonl", strings.Repeat(long, 100_000))
	small := write("small.jsonl", strings.Repeat(line, 1000))
	sub := filepath.Join(dir, "run")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	write("run/history.jsonl", strings.Repeat(line, 1_000_000))
	for _, tc := range []struct {
		name     string
		path     string
		min, max int64 // MiB
	}{
		{"a million short lines", short, 195, 225},
		{"the same history, by its directory", sub, 195, 225},
		{"long lines are held byte for byte", longs, 140, 175},
		{"a small history gets the floor", small, 128, 128},
		{"no history", filepath.Join(dir, "none"), 0, 0},
		{"a directory without one", t.TempDir(), 0, 0},
	} {
		got := analyzeMemoryLimit(tc.path) >> 20
		if got < tc.min || got > tc.max {
			t.Errorf("%s: %d MiB, want %d to %d", tc.name, got, tc.min, tc.max)
		}
	}
}
