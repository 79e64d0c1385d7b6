package nemesis_test

import (
	"context"
	"slices"
	"testing"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/nemesis"
)

// slowRestart is a killable fake server whose restart blocks until
// release is closed, as a member that takes its time to serve again.
type slowRestart struct {
	killable
	entered, release chan struct{}
}

func (s slowRestart) Restart(ctx context.Context) error {
	close(s.entered)
	<-s.release
	return s.call("restart")
}

// TestHealTime: HealTime counts a heal under way up to now (it grows while
// a restart waits for its server), and once the restart is done, the time
// it took, which stays put. The runner adds it to the run's duration.
func TestHealTime(t *testing.T) {
	s := slowRestart{killable{&fakeServer{name: "redis-0"}}, make(chan struct{}), make(chan struct{})}
	env := fakeEnv(t, 1, s)
	rec := memRecorder(t)
	e := nemesis.NewEngine(context.Background(), env, rec, []nemesis.Step{{Fault: "kill", Params: serverParams("A")}})
	if h := e.HealTime(); h != 0 {
		t.Fatalf("HealTime %v before any heal", h)
	}
	e.FireDue() // killed, and restarted at once (for: 0s) by its timer
	<-s.entered
	h1 := e.HealTime()
	waitFor(t, "the heal under way to count more", func() bool { return e.HealTime() > h1 })
	close(s.release)
	// Heal waits for the heal its timer began (and its stop op).
	if err := e.Heal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(rec.History(), func(op history.Op) bool { return op.F == "restart" }) {
		t.Fatal("no restart op after Heal")
	}
	done := e.HealTime()
	if done <= h1 {
		t.Errorf("HealTime %v after the restart, %v while it was under way", done, h1)
	}
	if h := e.HealTime(); h != done {
		t.Errorf("HealTime %v, then %v, with nothing left to heal", done, h)
	}
}
