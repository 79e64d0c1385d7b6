package main

import (
	"os"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/findings"
)

// TestListFindings: one line per finding of the registry, in its order,
// each starting with its id, then the library with a version read at run
// time, then what breaks; nothing else (scripts take the first word).
func TestListFindings(t *testing.T) {
	code, out, errOut := runCLI(t, "list", "findings")
	if code != exitValid {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	all := findings.All()
	if len(lines) != len(all) {
		t.Fatalf("%d lines for %d findings:\n%s", len(lines), len(all), out)
	}
	for i, f := range all {
		fields := strings.Fields(lines[i])
		if len(fields) == 0 || fields[0] != f.ID {
			t.Errorf("line %d %q: want id %s first", i, lines[i], f.ID)
			continue
		}
		if c := string(f.Class()); len(fields) < 2 || fields[1] != c || (c != "defect" && c != "limitation" && c != "gap") {
			t.Errorf("line %q: want its class %q second (defect, limitation or gap)", lines[i], c)
		}
		v := f.Version()
		if v == "" || v == "unknown" && f.Module != "" {
			t.Errorf("%s: version %q (a Go module this binary links must have one)", f.ID, v)
		}
		for _, want := range []string{f.Library + " " + v, f.Breaks} {
			if !strings.Contains(lines[i], want) {
				t.Errorf("line %q lacks %q", lines[i], want)
			}
		}
	}
}

// TestReproExitCodes: an unknown id or none is 254; a real quick repro of
// Redlock's clock jump (redsync, 2s) reproduces: exit 1, its first
// violation printed.
func TestReproExitCodes(t *testing.T) {
	for _, args := range [][]string{{"repro", "no-such-finding"}, {"repro"}, {"repro", "redlock-clock-jump", "extra"}, {"repro", "--bogus", "x"}} {
		if code, _, errOut := runCLI(t, args...); code != exitBadArgs {
			t.Errorf("%v: exit %d, want 254 (%s)", args, code, errOut)
		}
	}
	if _, _, errOut := runCLI(t, "repro", "no-such-finding"); !strings.Contains(errOut, "etcd-22082") {
		t.Errorf("unknown id: the known ones are not listed: %s", errOut)
	}
	requireRedis(t)
	store := t.TempDir()
	code, out, errOut := runCLI(t, "repro", "redlock-clock-jump", "--store", store, "--quiet", "--report")
	if code != exitInvalid {
		t.Fatalf("exit %d, want 1 (reproduced):\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"finding redlock-clock-jump (limitation): ", "finding redlock-clock-jump: REPRODUCED (seed 1)", "first violation: process", "double grant", "repeat:   locktorture repro redlock-clock-jump --seed 1", "issue:    " + store} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// --report: the issue text, in the run's directory, with the upstream
	// words quoted, the numbers, the command and the servers' versions.
	_, p, _ := strings.Cut(out, "issue:    ")
	p, _, _ = strings.Cut(p, "\n")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	f, _ := findings.Lookup("redlock-clock-jump")
	for _, want := range []string{"# redsync (Redlock) v", "Class: limitation", "> " + f.Evidence().Words, f.Evidence().Source, "the run is **invalid**", "double grant", "locktorture repro redlock-clock-jump --seed 1", "## Servers", "redis-a", "7.0"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report lacks %q:\n%s", want, b)
		}
	}
}
