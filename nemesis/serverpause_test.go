package nemesis_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/nemesis"
)

// server-pause's action on servers that no process stands behind is tested
// here (what it freezes and thaws); SIGSTOP and SIGCONT on a real server
// are TestNemeses "server-pause" (runner/nemesis_test.go) and, on someone
// else's servers, runner/external_test.go. Its params and where it applies
// are serverfault.go's (serverfault_test.go).

// TestServerPauseNames: a server pause is a start/stop pair and lasts.
func TestServerPauseNames(t *testing.T) {
	if start, stop := opNames(t, "server-pause"); start != "start-server-pause" || stop != "stop-server-pause" {
		t.Errorf("ops %q, %q", start, stop)
	}
	if allowsZero(t, "server-pause") {
		t.Error("a server pause of no time is allowed")
	}
	st := nemesis.Step{Fault: "server-pause", Params: serverParams("A")}
	if err := st.Check(nemesis.Shape{Clients: 1, Backend: "redis-token", Kinds: []string{"redis"}}); err == nil || !strings.Contains(err.Error(), "needs a duration") {
		t.Errorf("server-pause for 0s: %v", err)
	}
}

// TestServerPauseStart: server-pause freezes each server named until the
// heal thaws it; one that cannot be frozen is ErrTarget, and the servers
// frozen before it are thawed.
func TestServerPauseStart(t *testing.T) {
	ctx := context.Background()
	a, b, c := &fakeServer{name: "pg"}, &fakeServer{name: "redis-0"}, &fakeServer{name: "etcd-0"}
	env := fakeEnv(t, 1, pausable{a}, pausable{b}, c)
	val, heal, err := lookup(t, "server-pause").Start(ctx, env, serverParams("B"), 800*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(val, map[string]any{"servers": []string{"B"}, "ms": int64(800)}) {
		t.Errorf("start value %v", val)
	}
	if got := b.Calls(); !reflect.DeepEqual(got, []string{"pause"}) {
		t.Errorf("before the heal: %v, want pause", got)
	}
	if _, err := heal(ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.Calls(); !reflect.DeepEqual(got, []string{"pause", "resume"}) {
		t.Errorf("after the heal: %v, want pause, resume", got)
	}
	if got := a.Calls(); got != nil {
		t.Errorf("a server not named: %v", got)
	}

	_, heal, err = lookup(t, "server-pause").Start(ctx, env, serverParams("A", "C"), time.Second)
	if !errors.Is(err, nemesis.ErrTarget) || !strings.Contains(err.Error(), "etcd-0 cannot be paused") || heal != nil {
		t.Fatalf("servers [A C]: %v, want ErrTarget saying etcd-0 cannot be paused", err)
	}
	if got := a.Calls(); !reflect.DeepEqual(got, []string{"pause", "resume"}) {
		t.Errorf("the server paused first: %v, want pause, resume", got)
	}
}
