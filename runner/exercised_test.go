package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/nemesis"
)

// TestExerciseTally: a fault is put to the test when a client held the
// lock while it acted (or within a TTL after) and the lock answered some
// acquire after it struck (granted or refused busy); otherwise the tally
// says why not.
func TestExerciseTally(t *testing.T) {
	const s = int64(time.Second)
	op := func(at float64, p int, typ history.Type, f, err string) history.Op {
		return history.Op{Time: int64(at * float64(s)), Process: p, Type: typ, F: f, Key: "k0", Error: err}
	}
	// Client 0 holds from 0.1s to 0.5s.
	hold := []history.Op{
		op(0.1, 0, history.Invoke, history.Acquire, ""), op(0.1, 0, history.OK, history.Acquire, ""),
		op(0.5, 0, history.Invoke, history.Release, ""), op(0.5, 0, history.OK, history.Release, ""),
	}
	// Client 1 asks at 1.1s and 1.2s: both fail with an error.
	refused := []history.Op{
		op(1.1, 1, history.Invoke, history.Acquire, ""), op(1.1, 1, history.Info, history.Acquire, "EOF"),
		op(1.2, 1, history.Invoke, history.Acquire, ""), op(1.2, 1, history.Info, history.Acquire, "EOF"),
	}
	busy := []history.Op{op(1.3, 1, history.Invoke, history.Acquire, ""), op(1.3, 1, history.Fail, history.Acquire, "busy")}
	// An acquire that waits in line for the holder, past its timeout.
	timedOutAcquire := []history.Op{op(1.3, 1, history.Invoke, history.Acquire, ""), op(2.3, 1, history.Info, history.Acquire, "timeout: zk-lock: acquire k0: context deadline exceeded")}
	window := func(from, to float64) nemesis.Window {
		return nemesis.Window{Step: nemesis.Step{Fault: "pause", Duration: time.Duration((to - from) * float64(s))},
			Start: int64(from * float64(s)), Stop: int64(to * float64(s))}
	}
	// A failover strikes at 0.2s and takes effect (a Sentinel names the
	// new primary) at the time given, or never.
	failover := func(effect float64, never bool) nemesis.Window {
		return nemesis.Window{Step: nemesis.Step{Fault: "failover", Duration: time.Second},
			Start: int64(0.2 * float64(s)), Stop: int64(1.2 * float64(s)), Effect: int64(effect * float64(s)), Never: never}
	}
	cat := func(parts ...[]history.Op) []history.Op {
		var out []history.Op
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	cases := []struct {
		name   string
		window nemesis.Window
		ops    []history.Op
		want   string // in the problem ("" for none)
	}{
		{"a hold spans it, answered after", window(0.2, 0.3), cat(hold, busy), ""},
		{"a grant within its TTL after", window(0.0, 0.05), cat(hold, busy), ""},
		{"nobody held it, nor within a TTL", window(0.6, 0.7), cat(hold, refused, busy), "no client held the lock while pause"},
		{"a hold open at the end spans it", window(0.6, 0.7), cat(hold[:2], []history.Op{op(1.0, 0, history.Invoke, history.FinalRead, "")}), ""},
		{"every acquire after it failed", window(0.2, 0.3), cat(hold, refused), "each of the clients' 2 acquires failed with an error"},
		{"a timeout may be the lock waiting", window(0.2, 0.3), cat(hold, refused, timedOutAcquire), ""},
		{"one busy after it is an answer", window(0.2, 0.3), cat(hold, refused, busy), ""},
		{"failures before it do not count", window(1.25, 1.4), cat(hold, refused, busy), "no client held"},
		// lost-reply: the reply to client 0's acquire is lost (info): the
		// server may have granted it, and nobody else gets the lock until it
		// expires — a test of the lock, though no grant spans the window.
		// A failover met by a client: an acquire after the promotion.
		{"a failover's promotion met by an acquire", failover(1.25, false), cat(hold, refused, busy), ""},
		// The promotion came after the clients' last acquire (1.3s): the
		// clients only met the dead primary (answered by timeouts, say),
		// never the new one — not a test of the failover.
		{"a failover's promotion after the last acquire", failover(1.35, false), cat(hold, refused, timedOutAcquire), "took effect only at 1.350s, after the clients' last acquire"},
		{"a failover that never promoted", failover(0, true), cat(hold, refused, busy), "never took effect"},
		{"a lost grant is the lock in use", window(0.6, 0.7), cat(hold, []history.Op{op(0.65, 0, history.Invoke, history.Acquire, ""), op(0.66, 0, history.Info, history.Acquire, "connection reset")}, busy), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex := newExerciseTally([]nemesis.Window{tc.window}, 200*time.Millisecond)
			for i := range tc.ops {
				ex.add(&tc.ops[i])
			}
			got := strings.Join(ex.problems(), "; ")
			switch {
			case tc.want == "" && got != "":
				t.Errorf("exercised, but the tally says: %s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("problems %q, want one saying %q", got, tc.want)
			}
		})
	}
	if newExerciseTally(nil, time.Second).problems() != nil {
		t.Error("a run with no fault has problems")
	}
}
