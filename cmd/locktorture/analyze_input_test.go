package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/locktorture/locktorture/history"
)

// TestAnalyzeRefusesWhatItCannotRead: a history analyze cannot read, or
// that holds nothing to check, is bad input (254) in one line naming it,
// and nothing is written: a line past the cap (named by its number), a
// path that is not a regular file (a device, a named pipe with no writer,
// which would block analyze forever), an empty history, a time below zero
// (once a crash drawing rate.png, exit 255) or going backwards (an ok
// before its own invoke, once judged not linearizable).
func TestAnalyzeRefusesWhatItCannotRead(t *testing.T) {
	const op = `{"index":0,"time":100,"process":0,"type":"invoke","f":"acquire","key":"k0"}` + "\n"
	long := `{"index":1,"time":2,"process":0,"type":"fail","f":"acquire","key":"k0","error":"` + strings.Repeat("x", history.MaxLineBytes) + `"}` + "\n"
	file := func(name, text string) string {
		dir := t.TempDir()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := func(name string) string {
		dir := t.TempDir()
		p := filepath.Join(dir, name)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		return p
	}
	longFile := file("history.jsonl", op+long+op)
	pipe := fifo("h.jsonl")
	pipeInDir := fifo("history.jsonl")
	empty := file("history.jsonl", "")
	negative := file("history.jsonl", strings.Replace(op, "100", "-5000000000", 1)+strings.Replace(op, `"index":0,"time":100`, `"index":1,"time":-4000000000`, 1))
	okFirst := file("history.jsonl", strings.Replace(op, "100", "2000", 1)+`{"index":1,"time":1000,"process":0,"type":"ok","f":"acquire","key":"k0","lease_ms":1000}`+"\n")
	for _, tc := range []struct {
		name, path string
		says       []string
	}{
		{"a line past the cap", longFile, []string{longFile, "line 2", "longer than 16 MiB"}},
		{"a device", "/dev/zero", []string{"/dev/zero", "not a regular file"}},
		{"a named pipe", pipe, []string{pipe, "named pipe", "not a regular file"}},
		{"a directory whose history is a named pipe", filepath.Dir(pipeInDir), []string{pipeInDir, "named pipe"}},
		{"an empty history", empty, []string{empty, "holds no op"}},
		{"its directory", filepath.Dir(empty), []string{empty, "holds no op"}},
		{"blank lines only", file("h.jsonl", "\n\n  \n"), []string{"holds no op"}},
		{"one line, cut off", file("h.jsonl", op[:30]), []string{"holds no op", "cut off"}},
		{"a time below zero", negative, []string{negative, "line 1", "time -5000000000 is below zero"}},
		{"an ok stamped before its invoke", okFirst, []string{okFirst, "line 2", "time goes backwards (1000 after 2000)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat(tc.path); err != nil {
				t.Skip(err)
			}
			code, _, stderr := runCLI(t, "analyze", tc.path)
			if code != 254 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("exit %d, stderr %q; want 254 and one line", code, stderr)
			}
			for _, s := range tc.says {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr %q does not say %q", stderr, s)
				}
			}
			dir := tc.path
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				dir = filepath.Dir(dir)
			}
			if dir != "/dev" {
				if _, err := os.Stat(filepath.Join(dir, "results.json")); err == nil {
					t.Errorf("results.json written in %s", dir)
				}
			}
		})
	}
}
