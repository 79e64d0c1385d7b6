package scenarios

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/cluster/kinds/etcd"
	"github.com/locktorture/locktorture/cluster/kinds/zookeeper"
)

// TestFamiliesCoverEveryBackend: every family says of every built-in
// backend, in exactly one of its scenarios, either what to expect or why
// it is not run; a backend whose grants carry tokens (and that takes a
// lock) has a fenced expectation wherever it runs.
func TestFamiliesCoverEveryBackend(t *testing.T) {
	for _, fam := range Families {
		for _, info := range backends.List() {
			b := info.Name
			if b == ExecBackend {
				continue
			}
			var said []string
			for _, name := range FamilyScenarios(fam) {
				s, err := Builtin(name)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if FamilyOf(name) != fam {
					t.Errorf("%s is a scenario of %s, but FamilyOf says %s", name, fam, FamilyOf(name))
				}
				_, notRun := s.NotRun[b]
				applies := !notRun && s.Applies(b)
				if notRun || applies {
					said = append(said, name)
				}
				if _, fenced := s.Expect.Fenced[b]; applies && info.Fencing && !info.LockFree && !fenced {
					t.Errorf("%s: %s issues tokens but has no expect.fenced entry", name, b)
				}
			}
			if len(said) != 1 {
				t.Errorf("family %s: %s is run or named in not_run by %d of its scenarios (%v), want 1", fam, b, len(said), said)
			}
		}
	}
}

// TestFailoverLeader: the failover family runs etcd and ZooKeeper as the
// loss of their leader (three members, the leader killed), the Redis
// backends over Sentinel as a failover; a matrix by default runs only the
// canonical failover.
func TestFailoverLeader(t *testing.T) {
	if got := FamilyScenarios("failover"); !slices.Equal(got, []string{"failover", "failover-leader"}) {
		t.Errorf("failover family: %v", got)
	}
	if got := FamilyScenarios("pause"); !slices.Equal(got, []string{"pause"}) {
		t.Errorf("pause family: %v", got)
	}
	for _, b := range []string{"etcd", "zookeeper"} {
		s, err := Builtin("failover-leader")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(Overrides{Backend: &b}); err != nil {
			t.Fatalf("failover-leader with %s: %v", b, err)
		}
		if s.members(etcd.Kind) != 3 || s.members(zookeeper.Kind) != 3 || s.Expected(b).Valid != "valid" {
			t.Errorf("failover-leader with %s: %d etcd members, %d ZooKeeper members, expects %v", b, s.members(etcd.Kind), s.members(zookeeper.Kind), s.Expected(b))
		}
		f, err := Builtin("failover")
		if err != nil {
			t.Fatal(err)
		}
		if f.Applies(b) || f.NotRun[b] != "" {
			t.Errorf("failover still says of %s: applies %v, not run %q", b, f.Applies(b), f.NotRun[b])
		}
	}
	if d := MatrixDefault(); !slices.Contains(d, "failover") || slices.Contains(d, "failover-leader") {
		t.Errorf("matrix default: %v", d)
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
