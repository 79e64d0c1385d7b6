package nemesis_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/nemesis"
)

// kill's action on servers that no process stands behind is tested here
// (what it kills, restarts, and undoes); killing and restarting a real
// server is TestNemeses "kill and restart" (runner/nemesis_test.go) and,
// for an ensemble's leader, TestFailoverLeader
// (runner/failover_members_test.go). Its params and where it applies are
// serverfault.go's (serverfault_test.go).

// TestKillNames: a kill is recorded as kill, then restart, and may
// restart at once (`for: 0s`).
func TestKillNames(t *testing.T) {
	if start, stop := opNames(t, "kill"); start != "kill" || stop != "restart" {
		t.Errorf("ops %q, %q, want kill, restart", start, stop)
	}
	if !allowsZero(t, "kill") {
		t.Error("kill with `for: 0s` (restart at once) is refused")
	}
	st := nemesis.Step{Fault: "kill", Params: serverParams("A")}
	if err := st.Check(nemesis.Shape{Clients: 1, Backend: "redis-token", Kinds: []string{"redis"}}); err != nil {
		t.Errorf("kill for 0s: %v", err)
	}
}

// TestKillStart: kill crashes each server named and the heal restarts
// them; the start op says how long until the restart.
func TestKillStart(t *testing.T) {
	ctx := context.Background()
	a, b, c := &fakeServer{name: "redis-0"}, &fakeServer{name: "redis-1"}, &fakeServer{name: "redis-2"}
	env := fakeEnv(t, 1, killable{a}, killable{b}, killable{c})
	val, heal, err := lookup(t, "kill").Start(ctx, env, serverParams("C", "A"), 1500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(val, map[string]any{"servers": []string{"C", "A"}, "restart_after_ms": int64(1500)}) {
		t.Errorf("start value %v", val)
	}
	hv, err := heal(ctx)
	if err != nil || !reflect.DeepEqual(hv, map[string]any{"servers": []string{"C", "A"}}) {
		t.Errorf("heal: %v, %v", hv, err)
	}
	for _, tc := range []struct {
		s    *fakeServer
		want []string
	}{
		{a, []string{"kill", "restart"}},
		{b, nil},
		{c, []string{"kill", "restart"}},
	} {
		if got := tc.s.Calls(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.s.name, got, tc.want)
		}
	}
}

// TestKillStartUndone: a server that cannot be killed (not a Killer, or
// its kill fails) stops the step, and the servers killed before it are
// restarted: nothing is left down that no heal will bring back.
func TestKillStartUndone(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		second func(*fakeServer) cluster.Server
		is     error
		want   string
	}{
		{"not a Killer", func(s *fakeServer) cluster.Server { return s }, nemesis.ErrTarget, "redis-1 cannot be killed"},
		{"its kill fails", func(s *fakeServer) cluster.Server { s.fail = "kill"; return killable{s} }, errFake, "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := &fakeServer{name: "redis-0"}, &fakeServer{name: "redis-1"}
			env := fakeEnv(t, 1, killable{a}, tc.second(b))
			_, heal, err := lookup(t, "kill").Start(ctx, env, serverParams("A", "B"), time.Second)
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) || heal != nil {
				t.Fatalf("Start: %v, want %v saying %q", err, tc.is, tc.want)
			}
			if got := a.Calls(); !reflect.DeepEqual(got, []string{"kill", "restart"}) {
				t.Errorf("the server killed first: %v, want kill, restart", got)
			}
		})
	}
}
