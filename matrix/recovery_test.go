package matrix

import (
	"testing"

	"github.com/locktorture/locktorture/history"
)

func TestRecoveryOf(t *testing.T) {
	acq := func(at int64, p int) history.Op {
		return history.Op{Time: at, Process: p, Type: history.OK, F: history.Acquire, Key: "k0"}
	}
	inv := func(at int64, p int) history.Op {
		return history.Op{Time: at, Process: p, Type: history.Invoke, F: history.Acquire, Key: "k0"}
	}
	nem := func(at int64, f string) history.Op {
		return history.Op{Time: at, Process: history.NemesisProcess, Type: history.Info, F: f}
	}
	for _, tc := range []struct {
		name string
		ops  []history.Op
		want Recovery
		ok   bool
	}{
		{"no fault", []history.Op{acq(1, 0), acq(5, 1)}, Recovery{}, false},
		{"pause: next grant after the stop", []history.Op{acq(1, 0), nem(2, "start-pause"), acq(4, 1), nem(6, "stop-pause"), inv(7, 1), acq(9, 1)}, Recovery{NS: 3, Granted: true}, true},
		{"instant fault", []history.Op{acq(1, 0), nem(2, "kill"), nem(3, "restart"), inv(4, 1), acq(10, 1)}, Recovery{NS: 7, Granted: true}, true},
		{"no grant after", []history.Op{acq(1, 0), nem(2, "kill-session"), {Time: 7, Process: 1, Type: history.Invoke, F: history.Acquire, Key: "k0"}, {Time: 8, Process: 1, Type: history.Fail, F: history.Acquire, Key: "k0"}}, Recovery{NS: 6}, true},
		{"healed as the clients stopped", []history.Op{acq(1, 0), nem(2, "start-latency"), {Time: 8, Process: 1, Type: history.Fail, F: history.Acquire, Key: "k0"}, nem(8, "stop-latency")}, Recovery{}, false},
		{"fault the whole run", []history.Op{acq(1, 0), nem(2, "start-latency"), acq(9, 1), nem(20, "stop-latency")}, Recovery{}, false},
	} {
		got, ok := RecoveryOf(tc.ops)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: got %+v %v, want %+v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
