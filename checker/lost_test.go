package checker

import (
	"context"
	"testing"

	"github.com/locktorture/locktorture/history"
)

// lost adds a lost op of p on key at t: an invoke and its ok at one time.
func (b *hb) lost(t float64, p int, key string) *hb {
	return b.inv(t, p, history.Lost, key).ok(t, p, history.Lost, key)
}

// TestLostEndsTheHold: a lost op ends the process's hold on that key, so an
// overlap a stale holder causes is measured to the moment the client knew
// it had lost the lock, not to its later release; the earlier of the two
// counts, and histories without lost ops are judged as before.
func TestLostEndsTheHold(t *testing.T) {
	cases := []struct {
		name     string
		h        *hb
		overlaps int
		length   float64 // of the one overlap, seconds
		end      float64 // of process 0's first hold
	}{
		{"lost before the release: the overlap ends at lost",
			newHistory().
				inv(0, 0, history.Acquire, "k0").ok(0.001, 0, history.Acquire, "k0", lease(500)).
				inv(0.6, 1, history.Acquire, "k0").ok(0.601, 1, history.Acquire, "k0", lease(500)).
				lost(1.0, 0, "k0").
				inv(1.5, 0, history.Release, "k0").fail(1.501, 0, history.Release, "k0", errMsg("not held")).
				inv(2, 1, history.Release, "k0").ok(2.001, 1, history.Release, "k0"),
			1, 0.399, 1.0},
		{"no lost: the overlap ends at the release, as always",
			newHistory().
				inv(0, 0, history.Acquire, "k0").ok(0.001, 0, history.Acquire, "k0", lease(500)).
				inv(0.6, 1, history.Acquire, "k0").ok(0.601, 1, history.Acquire, "k0", lease(500)).
				inv(1.5, 0, history.Release, "k0").fail(1.501, 0, history.Release, "k0", errMsg("not held")).
				inv(2, 1, history.Release, "k0").ok(2.001, 1, history.Release, "k0"),
			1, 0.899, 1.5},
		{"lost before the next grant: no overlap",
			newHistory().
				inv(0, 0, history.Acquire, "k0").ok(0.001, 0, history.Acquire, "k0", lease(500)).
				lost(0.55, 0, "k0").
				inv(0.6, 1, history.Acquire, "k0").ok(0.601, 1, history.Acquire, "k0", lease(500)).
				inv(1.5, 0, history.Release, "k0").fail(1.501, 0, history.Release, "k0", errMsg("not held")).
				inv(2, 1, history.Release, "k0").ok(2.001, 1, history.Release, "k0"),
			0, 0, 0.55},
		{"lost after the release changes nothing",
			newHistory().
				inv(0, 0, history.Acquire, "k0").ok(0.001, 0, history.Acquire, "k0", lease(500)).
				inv(0.6, 1, history.Acquire, "k0").ok(0.601, 1, history.Acquire, "k0", lease(500)).
				inv(0.9, 0, history.Release, "k0").fail(0.901, 0, history.Release, "k0", errMsg("not held")).
				lost(1.2, 0, "k0").
				inv(2, 1, history.Release, "k0").ok(2.001, 1, history.Release, "k0"),
			1, 0.299, 0.9},
		{"lost on another key leaves this hold alone",
			newHistory().
				inv(0, 0, history.Acquire, "k0").ok(0.001, 0, history.Acquire, "k0", lease(500)).
				lost(0.3, 0, "k1").
				inv(0.6, 1, history.Acquire, "k0").ok(0.601, 1, history.Acquire, "k0", lease(500)).
				inv(1.5, 0, history.Release, "k0").ok(1.501, 0, history.Release, "k0").
				inv(2, 1, history.Release, "k0").ok(2.001, 1, history.Release, "k0"),
			1, 0.899, 1.5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ops := c.h.build()
			if err := history.Validate(context.Background(), ops); err != nil {
				t.Fatal(err)
			}
			holds := Holds(ops)
			if len(holds) != 2 || holds[0].Process != 0 || holds[0].End != ns(c.end) || holds[0].Open {
				t.Fatalf("holds %+v: want process 0's first, ending at %vs", holds, c.end)
			}
			m := Mutex(ops)
			if m.Count != c.overlaps {
				t.Fatalf("%d overlaps, want %d: %+v", m.Count, c.overlaps, m.Violations)
			}
			if c.overlaps > 0 && m.Violations[0].Length != ns(c.length) {
				t.Fatalf("overlap of %dns, want %v s", m.Violations[0].Length, c.length)
			}
			l := checkLinearizable(context.Background(), ops, 0)
			if l.Valid != m.Valid {
				t.Fatalf("mutex %v, linearizable %v", m.Valid, l.Valid)
			}
			var tr Tracker
			seen := 0
			for i := range ops {
				seen += tr.Observe(&ops[i])
			}
			if seen != c.overlaps {
				t.Fatalf("tracker saw %d overlaps, want %d", seen, c.overlaps)
			}
			s, err := NewStream(context.Background(), []string{NameMutex}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range ops {
				s.Add(&ops[i])
			}
			r, err := s.Result(nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Mutex.Count != c.overlaps || c.overlaps > 0 && r.Mutex.Violations[0].Length != ns(c.length) {
				t.Fatalf("the stream: %+v", r.Mutex)
			}
		})
	}
}

// TestRefusedTime: a key's no-holder time is split into what clients were
// refused (asked and not granted) and the clients' own pace, from the
// history alone.
func TestRefusedTime(t *testing.T) {
	cases := []struct {
		name            string
		h               *hb
		unheld, refused float64
	}{
		{"calm: slow clients come back late, every acquire granted",
			newHistory().
				hold(0, "k0", 0.1, 0.2).hold(1, "k0", 1.0, 1.1).hold(0, "k0", 2.0, 2.1).
				inv(3, 1, history.Acquire, "k0").ok(3.001, 1, history.Acquire, "k0").
				inv(3.1, 1, history.Release, "k0").ok(3.101, 1, history.Release, "k0"),
			// the run spans 0.099 to 3.101: [0.099, 0.1) [0.2, 1.0) [1.1, 2.0) [2.1, 3.001) [3.1, 3.101]
			0.001 + 0.8 + 0.9 + 0.901 + 0.001, 0},
		{"leaked: the key is asked for and refused busy until the end",
			newHistory().
				hold(0, "k0", 0.1, 0.2).
				inv(0.5, 1, history.Acquire, "k0").fail(0.501, 1, history.Acquire, "k0", errMsg("busy")).
				inv(1.5, 0, history.Acquire, "k0").fail(1.501, 0, history.Acquire, "k0", errMsg("busy")).
				inv(3, 1, history.Acquire, "k0").fail(3.001, 1, history.Acquire, "k0", errMsg("busy")),
			0.001 + 2.801, 2.501},
		{"refused, then granted: refused up to the granted acquire's invoke",
			newHistory().
				hold(0, "k0", 0.1, 0.2).
				inv(0.5, 1, history.Acquire, "k0").info(1.0, 1, history.Acquire, "k0", errMsg("timeout")).
				inv(2, 0, history.Acquire, "k0").ok(2.5, 0, history.Acquire, "k0").
				inv(3, 0, history.Release, "k0").ok(3.001, 0, history.Release, "k0"),
			0.001 + 2.3 + 0.001, 1.5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ops := c.h.build()
			near := func(got int64, want float64) bool { d := got - ns(want); return d > -2e6 && d < 2e6 }
			batch := statsOf(ops).Availability[0]
			s, err := NewStream(context.Background(), []string{NameStats}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range ops {
				s.Add(&ops[i])
			}
			r, err := s.Result(nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range []KeyAvailability{batch, r.Stats.Availability[0]} {
				if !near(a.Unheld, c.unheld) || !near(a.Refused, c.refused) {
					t.Errorf("unheld %dns, refused %dns; want about %vs, %vs", a.Unheld, a.Refused, c.unheld, c.refused)
				}
			}
		})
	}
}
