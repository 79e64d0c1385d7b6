package scenarios

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/backends"
)

// TestFamiliesCoverEveryBackend: every family says of every built-in
// backend either what to expect or why it is not run; a backend whose
// grants carry tokens (and that takes a lock) has a fenced expectation
// wherever it runs.
func TestFamiliesCoverEveryBackend(t *testing.T) {
	for _, name := range Families {
		s, err := Builtin(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, info := range backends.List() {
			b := info.Name
			if b == ExecBackend {
				continue
			}
			_, notRun := s.NotRun[b]
			applies := !notRun && (len(s.Backends) == 0 || slices.Contains(s.Backends, b))
			if !notRun && !applies {
				t.Errorf("%s: %s is neither run nor in not_run", name, b)
			}
			if _, fenced := s.Expect.Fenced[b]; applies && info.Fencing && !info.LockFree && !fenced {
				t.Errorf("%s: %s issues tokens but has no expect.fenced entry", name, b)
			}
		}
	}
}

func TestNotRun(t *testing.T) {
	base := "name: x\nbackend: redis-token\nnot_run:\n"
	for _, tc := range []struct{ yaml, want string }{
		{base + "  nosuch: why\n", "unknown backend"},
		{base + "  mutex: \"\"\n", "needs the reason"},
		{"name: x\nbackend: redis-token\nbackends: [mutex]\nnot_run:\n  mutex: why\n", "also in backends"},
		{base + "  redis-token: no server to cut\n", "x is not run with redis-token: no server to cut"},
	} {
		_, err := Parse([]byte(tc.yaml), "x.yaml")
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.yaml, err, tc.want)
		}
	}
	s, err := Builtin("delay")
	if err != nil {
		t.Fatal(err)
	}
	b := "etcd"
	if err := s.Apply(Overrides{Backend: &b}); err == nil || !strings.Contains(err.Error(), "delay is not run with etcd: in-process etcd clients renew") {
		t.Errorf("delay with etcd: %v", err)
	}
}

func TestFencedExpectation(t *testing.T) {
	s, err := Builtin("pause")
	if err != nil {
		t.Fatal(err)
	}
	b, all := "etcd", "all"
	if err := s.Apply(Overrides{Backend: &b}); err != nil {
		t.Fatal(err)
	}
	if e := s.Expected(b); e.Checkers["lost-update"] != "invalid" {
		t.Errorf("unfenced etcd pause expects %v", e)
	}
	if err := s.Apply(Overrides{Fencing: &all}); err != nil {
		t.Fatal(err)
	}
	if e := s.Expected(b); e.Valid != "invalid" || e.Checkers["fencing"] != "valid" || e.Checkers["lost-update"] != "valid" {
		t.Errorf("fenced etcd pause expects %v", e)
	}
}
