package nemesis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locktorture/locktorture/nemesis"
)

// pause acts on the clients' gates, in this process: its whole effect is
// tested here. Engine-level behaviour (a pause on an event, a second pause
// of a paused client) is in nemesis_test.go; a pause of a real client
// process is TestBuiltinScenarios/pause (runner/builtin_test.go).

// TestPauseParams: pause needs one client process of the run.
func TestPauseParams(t *testing.T) {
	two := nemesis.Shape{Clients: 2}
	checkValidate(t, []validateCase{
		{"process 0", two, pp(0), "", ""},
		{"process 1", two, pp(1), "", ""},
		{"no process", two, &nemesis.PauseParams{}, "process", "needs `process:` (a client from 0 to 1)"},
		{"process past the last", two, pp(2), "process", "no client process 2 (clients are 0 to 1)"},
		{"negative process", two, pp(-1), "process", "no client process -1"},
	})
	for _, tc := range []struct {
		p    *nemesis.PauseParams
		want string
	}{
		{pp(3), "process 3"},
		{&nemesis.PauseParams{}, ""},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

// TestPauseApplies: pause applies to every backend, with servers or none,
// and needs a duration.
func TestPauseApplies(t *testing.T) {
	checkApplies(t, "pause", pp(0), []appliesCase{
		{"in-process lock", nemesis.Shape{Clients: 1, Backend: "mutex"}, ""},
		{"redis", nemesis.Shape{Clients: 1, Backend: "redis-token", Kinds: []string{"redis"}}, ""},
		{"someone else's servers", nemesis.Shape{Clients: 1, Backend: "redis-token", Kinds: []string{"redis"}, Uncontrolled: []string{"redis 10.0.0.5:6379"}}, ""},
	})
	if allowsZero(t, "pause") {
		t.Error("a pause of no time is allowed")
	}
	if start, stop := opNames(t, "pause"); start != "start-pause" || stop != "stop-pause" {
		t.Errorf("ops %q, %q", start, stop)
	}
}

// TestPauseStart: a pause freezes the target client's gate, and only it,
// until healed; a process the run does not have is ErrTarget.
func TestPauseStart(t *testing.T) {
	ctx := context.Background()
	env := fakeEnv(t, 3)
	f := lookup(t, "pause")
	val, heal, err := f.Start(ctx, env, pp(1), 2*time.Second)
	if err != nil || heal == nil {
		t.Fatalf("Start: %v, %v", heal, err)
	}
	if val["process"] != 1 || val["ms"] != int64(2000) {
		t.Errorf("start value %v", val)
	}
	for i, g := range env.Gates {
		if g.Paused() != (i == 1) {
			t.Errorf("client %d paused: %v", i, g.Paused())
		}
	}
	hv, err := heal(ctx)
	if err != nil || hv["process"] != 1 {
		t.Errorf("heal: %v, %v", hv, err)
	}
	if env.Gates[1].Paused() {
		t.Error("client 1 still paused after the heal")
	}
	if _, _, err := f.Start(ctx, env, pp(3), time.Second); !errors.Is(err, nemesis.ErrTarget) {
		t.Errorf("pause of client 3 of 3: %v, want ErrTarget", err)
	}
}

// TestPauseRandomParams: a random pause picks a client of the run, the
// same one from the same seed, and strikes on its next read.
func TestPauseRandomParams(t *testing.T) {
	env := fakeEnv(t, 3)
	seen := map[int]bool{}
	for _, p := range randomParams(t, "pause", env, 11, 40) {
		pp, ok := p.(*nemesis.PauseParams)
		if !ok {
			t.Fatalf("params %T", p)
		}
		if err := pp.Validate(nemesis.Shape{Clients: 3}); err != nil {
			t.Errorf("random params %v do not validate: %v", pp, err)
		}
		seen[pp.EventProcess()] = true
	}
	if len(seen) != 3 {
		t.Errorf("40 random pauses hit clients %v, want all 3", seen)
	}
	if e, ok := lookup(t, "pause").(nemesis.RandomEventer); !ok || e.RandomEvent() != "read" {
		t.Errorf("a random pause does not strike on a read")
	}
}
