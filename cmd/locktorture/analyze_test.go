package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnalyzeExitCodes: a double grant in a history that also breaks the
// contract never turns grey. An op the checkers cannot judge is 254 with
// one line naming it; a rule they can work around is a warning, and the
// verdict's own code.
func TestAnalyzeExitCodes(t *testing.T) {
	const grant = `{"index":0,"time":100,"process":0,"type":"invoke","f":"acquire","key":"k0"}
{"index":1,"time":200,"process":0,"type":"ok","f":"acquire","key":"k0","lease_ms":1000}
{"index":2,"time":300,"process":1,"type":"invoke","f":"acquire","key":"k0"}
{"index":3,"time":400,"process":1,"type":"ok","f":"acquire","key":"k0","lease_ms":1000}
`
	for _, tc := range []struct {
		name, hist string
		code       int
		stderr     string
	}{
		{"double grant", grant, 1, ""},
		{"type outside the contract", grant + `{"index":4,"time":500,"process":1,"type":"OK","f":"release","key":"k0"}` + "\n", 254, `type "OK"`},
		{"no type", grant + `{"index":4,"time":500,"process":1,"f":"release","key":"k0"}` + "\n", 254, `"type"`},
		{"acquire without a key", grant + `{"index":4,"time":500,"process":2,"type":"invoke","f":"acquire"}` + "\n", 254, `no "key"`},
		{"process -7 warns", grant + `{"index":4,"time":500,"process":-7,"type":"invoke","f":"release","key":"k0"}` + "\n", 1, "process -7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(tc.hist), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runCLI(t, "analyze", dir)
			if code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.code, stderr)
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr %q does not say %q", stderr, tc.stderr)
			}
			if tc.code == 254 && strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("want one line, got %q", stderr)
			}
		})
	}
}

// TestFlagErrorsAreOneLine: a bad flag is one line and a hint, not the
// whole usage; --store naming a file is bad input.
func TestFlagErrorsAreOneLine(t *testing.T) {
	file := writeFile(t, "not-a-dir", "x")
	for _, args := range [][]string{
		{"run", "--frobs"},
		{"run", "--hold", "x"},
		{"analyze", "--frobs", "x"},
		{"run", "--scenario", "baseline", "--backend", "mutex", "--store", file},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 254 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%q: exit %d, stderr %q; want 254 and one line", args, code, stderr)
		}
	}
}

// TestAnalyzeInterrupted: Ctrl-C (the command's context ending) is
// "interrupted", exit 255, in one line — never Go's "context canceled" —
// and an analyze stopped before its verdict writes no results.json.
func TestAnalyzeInterrupted(t *testing.T) {
	dir := t.TempDir()
	hist := `{"index":0,"time":100,"process":0,"type":"invoke","f":"acquire","key":"k0"}
{"index":1,"time":200,"process":0,"type":"ok","f":"acquire","key":"k0","lease_ms":1000}
`
	if err := os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(hist), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := analyze(ctx, []string{dir}, &stdout, &stderr)
	if code != exitHarness {
		t.Errorf("exit %d, want 255", code)
	}
	line := strings.TrimSpace(stderr.String())
	if !strings.Contains(line, "locktorture analyze: interrupted") || strings.Contains(line, "context canceled") || strings.Contains(line, "\n") {
		t.Errorf("stderr %q: want one line saying it was interrupted", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "results.json")); err == nil {
		t.Errorf("an interrupted analyze wrote results.json")
	}
}
