package checker

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/history"
)

const (
	acq = history.Acquire
	rel = history.Release
	ext = history.Extend
	rd  = history.Read
	wr  = history.Write
	fr  = history.FinalRead
)

func TestHolds(t *testing.T) {
	ops := newHistory().
		inv(0.0, 0, acq, "k0").ok(0.1, 0, acq, "k0", fence(7), lease(1000)).
		inv(0.2, 1, acq, "k0").fail(0.21, 1, acq, "k0", errMsg("busy")).
		inv(0.3, 2, acq, "k0").info(0.4, 2, acq, "k0", errMsg("timeout")).
		nemesis(0.45, "start-pause").
		inv(0.5, 0, ext, "k0").ok(0.6, 0, ext, "k0", lease(2000)).
		inv(0.7, 0, ext, "k0").fail(0.8, 0, ext, "k0").
		inv(0.9, 0, rel, "k0").info(1.0, 0, rel, "k0", errMsg("timeout")).
		inv(1.1, 1, acq, "k1").ok(1.2, 1, acq, "k1").
		inv(1.3, 2, acq, "k0").ok(1.4, 2, acq, "k0", fence(8)).
		nemesis(1.5, "stop-pause").
		build()
	got := Holds(ops)
	want := []Hold{
		{Process: 0, Key: "k0", Start: ns(0.1), End: ns(0.9), Fence: history.Int64(7), LeaseMS: history.Int64(1000), LeaseEnd: history.Int64(ns(2.6))},
		{Process: 2, Key: "k0", Start: ns(1.4), End: ns(1.5), Open: true, Fence: history.Int64(8)},
		{Process: 1, Key: "k1", Start: ns(1.2), End: ns(1.5), Open: true},
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if !bytes.Equal(gb, wb) {
		t.Fatalf("Holds:\n got %s\nwant %s", gb, wb)
	}
}

// mutexCases are histories with the number of overlaps the mutex checker
// must find (stale holders, double grants); the linearizable checker must
// agree on each.
var mutexCases = []struct {
	name          string
	h             *hb
	stale, double int
}{
	{"hand-off", newHistory().hold(0, "k0", 0.1, 0.5, lease(1000)).hold(1, "k0", 0.6, 0.9, lease(1000)), 0, 0},
	{"overlap without lease", newHistory().hold(0, "k0", 0.1, 0.5).hold(1, "k0", 0.3, 0.7), 0, 1},
	{"overlap of length zero", newHistory().hold(0, "k0", 0.1, 0.5).hold(1, "k0", 0.5, 0.9), 0, 0},
	{"stale holder", newHistory().hold(0, "k0", 0.1, 2.6, lease(1000)).hold(1, "k0", 1.3, 1.4, lease(1000)), 1, 0},
	{"double grant, lease still valid", newHistory().hold(0, "k0", 0.1, 2.6, lease(5000)).hold(1, "k0", 1.3, 1.4, lease(5000)), 0, 1},
	{"lease runs out at the later acquire", newHistory().hold(0, "k0", 0.3, 2.6, lease(1000)).hold(1, "k0", 1.3, 1.4), 1, 0},
	{"extend keeps the lease valid", newHistory().hold(0, "k0", 0.1, 2.6, lease(1000)).
		inv(0.8, 0, ext, "k0").ok(0.9, 0, ext, "k0", lease(1000)).
		hold(1, "k0", 1.3, 1.4), 0, 1},
	{"a later extend does not rewrite the past", newHistory().hold(0, "k0", 0.0, 2.6, lease(100)).
		hold(1, "k0", 0.12, 0.13, lease(1000)).
		inv(0.14, 0, ext, "k0").ok(0.15, 0, ext, "k0", lease(1000)), 1, 0},
	{"an extend before the later grant does count", newHistory().hold(0, "k0", 0.0, 2.6, lease(100)).
		inv(0.05, 0, ext, "k0").ok(0.06, 0, ext, "k0", lease(1000)).
		hold(1, "k0", 0.12, 0.13, lease(1000)), 0, 1},
	{"failed extend does not", newHistory().hold(0, "k0", 0.1, 2.6, lease(1000)).
		inv(0.8, 0, ext, "k0").fail(0.9, 0, ext, "k0", lease(1000)).
		inv(1.0, 0, ext, "k0").info(1.1, 0, ext, "k0").
		hold(1, "k0", 1.3, 1.4), 1, 0},
	{"failed and indeterminate acquires are not holds", newHistory().hold(0, "k0", 0.1, 0.5).
		inv(0.2, 1, acq, "k0").fail(0.25, 1, acq, "k0", errMsg("busy")).
		inv(0.3, 2, acq, "k0").info(0.35, 2, acq, "k0", errMsg("timeout")).
		inv(0.4, 2, rel, "k0").ok(0.41, 2, rel, "k0"), 0, 0},
	{"release that fails or times out still ends the hold", newHistory().
		inv(0.0, 0, acq, "k0").ok(0.1, 0, acq, "k0").inv(0.5, 0, rel, "k0").info(0.6, 0, rel, "k0", errMsg("timeout")).
		inv(0.5, 1, acq, "k0").ok(0.55, 1, acq, "k0").inv(0.7, 1, rel, "k0").fail(0.8, 1, rel, "k0", errMsg("not held")).
		inv(0.7, 2, acq, "k0").ok(0.75, 2, acq, "k0").inv(0.9, 2, rel, "k0").ok(0.91, 2, rel, "k0"), 0, 0},
	{"different keys", newHistory().hold(0, "k0", 0.1, 0.5).hold(1, "k1", 0.2, 0.6).hold(2, "k2", 0.3, 0.7), 0, 0},
	{"nemesis ops interleaved, hand-off", newHistory().nemesis(0.05, "start-partition").hold(0, "k0", 0.1, 0.5).
		nemesis(0.3, "stop-partition").hold(1, "k0", 0.6, 0.9).nemesis(0.95, "kill"), 0, 0},
	{"nemesis ops interleaved, overlap", newHistory().nemesis(0.05, "start-pause").hold(0, "k0", 0.1, 0.5, lease(100)).
		nemesis(0.3, "stop-pause").hold(1, "k0", 0.4, 0.9).nemesis(0.95, "failover"), 1, 0},
	{"open hold at the end", newHistory().inv(0.0, 0, acq, "k0").ok(0.1, 0, acq, "k0", lease(10000)).hold(1, "k0", 0.3, 0.4), 0, 1},
	{"open hold alone", newHistory().hold(1, "k0", 0.1, 0.4).inv(0.5, 0, acq, "k0").ok(0.6, 0, acq, "k0"), 0, 0},
	{"three processes at once", newHistory().hold(0, "k0", 0.1, 0.5).hold(1, "k0", 0.2, 0.6).hold(2, "k0", 0.3, 0.7), 0, 3},
	{"hold of no length inside another", newHistory().hold(0, "k0", 0.1, 0.5).hold(1, "k0", 0.3, 0.3), 0, 1},
	{"hold of no length at the start of another", newHistory().hold(0, "k0", 0.1, 0.5).hold(1, "k0", 0.1, 0.1), 0, 0},
	{"two holds open at the end", newHistory().inv(0.0, 0, acq, "k0").ok(0.1, 0, acq, "k0").inv(0.2, 1, acq, "k0").ok(0.5, 1, acq, "k0"), 0, 1},
	{"re-acquire without release", newHistory().inv(0.0, 0, acq, "k0").ok(0.1, 0, acq, "k0").inv(0.2, 0, acq, "k0").ok(0.3, 0, acq, "k0").
		inv(0.4, 0, rel, "k0").ok(0.5, 0, rel, "k0").hold(1, "k0", 0.6, 0.7), 0, 0},
}

func TestMutex(t *testing.T) {
	for _, c := range mutexCases {
		t.Run(c.name, func(t *testing.T) {
			r := Mutex(c.h.build())
			if r.StaleHolders != c.stale || r.DoubleGrants != c.double || r.Count != c.stale+c.double || len(r.Violations) != r.Count {
				t.Fatalf("got %d stale holders, %d double grants, count %d, %d listed; want %d, %d: %+v",
					r.StaleHolders, r.DoubleGrants, r.Count, len(r.Violations), c.stale, c.double, r.Violations)
			}
			if want := Valid; r.Count > 0 && r.Valid != Invalid || r.Count == 0 && r.Valid != want {
				t.Fatalf("verdict %v with %d violations", r.Valid, r.Count)
			}
			for _, v := range r.Violations {
				if v.Earlier.Process == v.Later.Process || v.Length < 0 || v.Start != v.Later.Start || v.Description == "" {
					t.Errorf("bad overlap %+v", v)
				}
			}
		})
	}
}

func TestLinearizableAgreesWithMutex(t *testing.T) {
	for _, c := range mutexCases {
		t.Run(c.name, func(t *testing.T) {
			ops := c.h.build()
			m, l := Mutex(ops), checkLinearizable(context.Background(), ops, 0)
			if m.Valid != l.Valid {
				t.Fatalf("mutex %v (%+v) but linearizable %v (%+v)", m.Valid, m.Violations, l.Valid, l)
			}
			if l.Valid == Invalid && (len(l.BadKeys) != 1 || l.BadKeys[0] != "k0") {
				t.Fatalf("bad keys %v, want [k0]", l.BadKeys)
			}
		})
	}
}

func TestMutexDescriptions(t *testing.T) {
	cases := []struct {
		name string
		h    *hb
		want string
	}{
		{"stale holder", newHistory().
			inv(0.0, 0, acq, "k0").ok(0.0, 0, acq, "k0", fence(33), lease(1000)).inv(2.61, 0, rel, "k0").ok(2.62, 0, rel, "k0").
			inv(1.29, 1, acq, "k0").ok(1.30, 1, acq, "k0", fence(34), lease(1000)).inv(3.0, 1, rel, "k0").ok(3.1, 1, rel, "k0"),
			"process 0 held k0 (fence 33) until 2.61s, but process 1 acquired k0 (fence 34) at 1.30s: 1.31s of overlap — stale holder, its 1s lease had run out at 1.00s"},
		{"double grant", newHistory().hold(0, "k0", 0.0, 2.0, lease(2500)).hold(1, "k0", 1.0, 1.5, lease(800)),
			"process 0 held k0 until 2.00s, but process 1 acquired k0 at 1.00s: 0.50s of overlap — double grant, process 0's 2.5s lease was still valid until 2.50s"},
		{"late reply: the later holder is the stale one", newHistory().hold(1, "k0", 3.9, 4.03, lease(499)).
			inv(3.0, 0, acq, "k0").ok(4.0, 0, acq, "k0", lease(0)).inv(4.1, 0, rel, "k0").ok(5.1, 0, rel, "k0"),
			"process 1 held k0 until 4.03s, but process 0 acquired k0 at 4.00s: 0.03s of overlap — stale holder, process 0's 0s lease had already run out at 4.00s when it heard it had the lock"},
		{"quorum grants name their nodes", newHistory().
			inv(0.0, 0, acq, "k0").ok(0.1, 0, acq, "k0", nodes("A", "B", "C"), lease(1900)).inv(1.6, 0, rel, "k0").ok(1.7, 0, rel, "k0").
			inv(0.5, 1, acq, "k0").ok(0.6, 1, acq, "k0", nodes("C", "D", "E"), lease(1900)).inv(2.1, 1, rel, "k0").ok(2.2, 1, rel, "k0"),
			"process 0 held k0 (on A,B,C) until 1.60s, but process 1 acquired k0 (on C,D,E) at 0.60s: 1.00s of overlap — double grant, process 0's 1.9s lease was still valid until 2.00s"},
		{"double grant without lease, open", newHistory().hold(1, "k0", 1.0, 1.5).inv(0, 0, acq, "k0").ok(0.2, 0, acq, "k0"),
			"process 0 held k0 to the end of the history, but process 1 acquired k0 at 1.00s: 0.50s of overlap — double grant, process 0's hold had no lease"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Mutex(c.h.build())
			if len(r.Violations) != 1 || r.Violations[0].Description != c.want {
				t.Fatalf("got %+v\nwant %q", r.Violations, c.want)
			}
		})
	}
}

func TestMutexListsEveryViolation(t *testing.T) {
	b := newHistory()
	for i := range 150 {
		at := float64(i)
		b.hold(0, "k0", at+0.1, at+0.5).hold(1, "k0", at+0.2, at+0.6)
	}
	r := Mutex(b.build())
	if r.Count != 150 || len(r.Violations) != 150 || r.Valid != Invalid {
		t.Fatalf("count %d, listed %d, %v", r.Count, len(r.Violations), r.Valid)
	}
	for i := 1; i < len(r.Violations); i++ {
		if r.Violations[i].Start < r.Violations[i-1].Start {
			t.Fatalf("violations not sorted by start")
		}
	}
	if r.Violations[0].Start != ns(0.2) {
		t.Fatalf("first listed violation at %d, want the earliest", r.Violations[0].Start)
	}
}

func TestLinearizableStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ops := newHistory().hold(0, "k0", 0.1, 0.5).hold(1, "k1", 0.1, 0.5).build()
	r := checkLinearizable(ctx, ops, 0)
	if r.Valid != Unknown || len(r.UnknownKeys) != 2 || r.TimeoutMS != defaultLinearizableTimeout.Milliseconds() || r.Ops != 4 || r.Keys != 2 {
		t.Fatalf("got %+v", r)
	}
	r = checkLinearizable(context.Background(), ops, time.Minute)
	if r.Valid != Valid || r.TimeoutMS != 60000 {
		t.Fatalf("got %+v", r)
	}
}

func TestLinearizableVisualization(t *testing.T) {
	ops := newHistory().hold(0, "k0", 0.1, 0.5, fence(3)).hold(1, "k0", 0.3, 0.7).hold(2, "k1", 0.1, 0.2).build()
	var buf bytes.Buffer
	if err := LinearizableVisualization(ops, &buf); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"<html", `p0 acquire k0 -\u003e ok (fence 3)`, "held by p", "free"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("visualization lacks %q", s)
		}
	}
}

func TestFencing(t *testing.T) {
	cases := []struct {
		name              string
		h                 *hb
		count, rejected   int
		fenced, unfenced  int
		want, wantRejects string
	}{
		{"increasing fences", newHistory().
			inv(0.1, 0, wr, "k0", fence(1), val(1)).ok(0.2, 0, wr, "k0", fence(1), val(1)).
			inv(0.3, 1, wr, "k0", fence(2), val(2)).ok(0.4, 1, wr, "k0", fence(2), val(2)), 0, 0, 2, 0, "", ""},
		{"equal fences", newHistory().
			inv(0.1, 0, wr, "k0", fence(2)).ok(0.2, 0, wr, "k0", fence(2)).
			inv(0.3, 0, wr, "k0", fence(2)).ok(0.4, 0, wr, "k0", fence(2)), 0, 0, 2, 0, "", ""},
		{"stale write accepted", newHistory().
			inv(1.2, 1, wr, "k0", fence(34)).ok(1.3, 1, wr, "k0", fence(34)).
			nemesis(2.0, "stop-pause").
			inv(2.6, 0, wr, "k0", fence(33)).ok(2.61, 0, wr, "k0", fence(33)), 1, 0, 2, 0,
			"process 0's write to k0 with fence 33 was accepted at 2.61s after a write with fence 34 had been accepted", ""},
		{"fence taken from the invoke", newHistory().
			inv(1.2, 1, wr, "k0", fence(34)).ok(1.3, 1, wr, "k0").
			inv(2.6, 0, wr, "k0", fence(33)).ok(2.61, 0, wr, "k0"), 1, 0, 2, 0, "", ""},
		{"concurrent writes are not judged", newHistory().
			inv(1.0, 1, wr, "k0", fence(34)).inv(1.1, 0, wr, "k0", fence(33)).
			ok(1.2, 1, wr, "k0", fence(34)).ok(1.3, 0, wr, "k0", fence(33)), 0, 0, 2, 0, "", ""},
		{"stale write rejected", newHistory().
			inv(1.2, 1, wr, "k0", fence(34)).ok(1.3, 1, wr, "k0", fence(34)).
			inv(2.6, 0, wr, "k0", fence(33)).fail(2.61, 0, wr, "k0", fence(33), errMsg("stale fence 33 < 34")).
			inv(2.7, 0, rd, "k0", fence(33)).fail(2.71, 0, rd, "k0", errMsg("STALE token")).
			inv(2.8, 0, wr, "k0", fence(33)).fail(2.81, 0, wr, "k0", errMsg("connection refused")), 0, 2, 1, 0,
			"", "the resource rejected process 0's write to k0 with fence 33 (stale fence 33 < 34)"},
		{"rejections in other words", newHistory().
			inv(1.2, 1, rd, "k0", fence(34)).ok(1.3, 1, rd, "k0", fence(34)).
			inv(2.6, 0, wr, "k0", fence(33)).fail(2.61, 0, wr, "k0", fence(33), errMsg("rejected")).
			inv(2.7, 0, wr, "k0", fence(33)).fail(2.71, 0, wr, "k0", fence(33)).
			inv(2.8, 0, wr, "k0", fence(34)).fail(2.81, 0, wr, "k0", fence(34)).
			inv(2.9, 0, wr, "k0", fence(33)).fail(2.91, 0, wr, "k0", errMsg("fencing token too low")), 0, 3, 0, 0, "", ""},
		{"indeterminate and failed writes are not accepted", newHistory().
			inv(1.2, 1, wr, "k0", fence(34)).info(1.3, 1, wr, "k0", errMsg("timeout")).
			inv(2.6, 0, wr, "k0", fence(33)).ok(2.61, 0, wr, "k0", fence(33)), 0, 0, 1, 0, "", ""},
		{"unfenced writes are counted, not judged", newHistory().
			inv(0.1, 0, wr, "k0", fence(5)).ok(0.2, 0, wr, "k0", fence(5)).
			inv(0.3, 1, wr, "k0").ok(0.4, 1, wr, "k0").
			inv(0.5, 0, wr, "k0", fence(5)).ok(0.6, 0, wr, "k0", fence(5)), 0, 0, 2, 1, "", ""},
		{"different keys", newHistory().
			inv(0.1, 0, wr, "k0", fence(34)).ok(0.2, 0, wr, "k0", fence(34)).
			inv(0.3, 1, wr, "k1", fence(33)).ok(0.4, 1, wr, "k1", fence(33)), 0, 0, 2, 0, "", ""},
		{"negative and zero fences", newHistory().
			inv(0.1, 0, wr, "k0", fence(0)).ok(0.2, 0, wr, "k0", fence(0)).
			inv(0.3, 1, wr, "k0", fence(-1)).ok(0.4, 1, wr, "k0", fence(-1)), 1, 0, 2, 0, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := checkFencing(c.h.build())
			if r.Count != c.count || r.RejectedStale != c.rejected || r.FencedWrites != c.fenced || r.UnfencedWrites != c.unfenced {
				t.Fatalf("got %+v", r)
			}
			if (r.Count > 0) != (r.Valid == Invalid) || (r.Count == 0) != (r.Valid == Valid) {
				t.Fatalf("verdict %v with %d violations", r.Valid, r.Count)
			}
			if c.want != "" && r.Violations[0].Description != c.want {
				t.Errorf("description %q, want %q", r.Violations[0].Description, c.want)
			}
			if c.wantRejects != "" && r.Rejections[0].Description != c.wantRejects {
				t.Errorf("rejection %q, want %q", r.Rejections[0].Description, c.wantRejects)
			}
		})
	}
}

func TestLostUpdate(t *testing.T) {
	incr := func(b *hb, p int, key string, at float64, v int64, ty history.Type) *hb {
		b.inv(at, p, rd, key).ok(at+0.01, p, rd, key, val(v-1)).inv(at+0.02, p, wr, key, val(v))
		return b.add(at+0.03, p, ty, wr, key, val(v))
	}
	final := func(b *hb, key string, at float64, v int64) *hb {
		return b.inv(at, 0, fr, key).ok(at+0.01, 0, fr, key, val(v))
	}
	seq := func(n int, key string) *hb {
		b := newHistory()
		for i := range n {
			incr(b, i%3, key, float64(i), int64(i+1), history.OK)
		}
		return b
	}
	cases := []struct {
		name      string
		h         *hb
		dup, low  int
		want      string
		keys, acc int
	}{
		{"increments", final(seq(3, "k0"), "k0", 10, 3), 0, 0, "", 1, 3},
		{"duplicate write", final(incr(incr(newHistory(), 1, "k0", 0, 1, history.OK), 0, "k0", 0.005, 1, history.OK), "k0", 10, 1), 1, 1,
			"processes 1 and 0 both wrote 1 to k0: one increment was lost", 1, 2},
		{"three writes of one value", incr(incr(incr(newHistory(), 0, "k0", 0, 1, history.OK), 1, "k0", 0, 1, history.OK), 2, "k0", 0, 1, history.OK), 1, 0,
			"processes 0, 1 and 2 all wrote 1 to k0: 2 increments were lost", 1, 3},
		{"low final read", final(seq(7, "k0"), "k0", 10, 1), 0, 1,
			"k0 read 1 at the end but 7 writes were accepted: 6 increments lost", 1, 7},
		{"final read one short", final(seq(2, "k0"), "k0", 10, 1), 0, 1,
			"k0 read 1 at the end but 2 writes were accepted: 1 increment lost", 1, 2},
		{"indeterminate writes never count", final(incr(incr(newHistory(), 1, "k0", 0, 1, history.Info), 0, "k0", 0.005, 1, history.OK), "k0", 10, 2), 0, 0, "", 1, 1},
		{"failed writes never count", final(incr(incr(newHistory(), 1, "k0", 0, 1, history.Fail), 0, "k0", 0.005, 1, history.OK), "k0", 10, 1), 0, 0, "", 1, 1},
		{"no final read: duplicates only, unknown", seq(5, "k0"), 0, 0, "", 1, 5},
		{"no final read of one key: unknown", final(incr(incr(newHistory(), 1, "k0", 0, 1, history.OK), 0, "k1", 0, 1, history.OK), "k0", 10, 1), 0, 0, "", 2, 2},
		{"no final read, but a duplicate: invalid", incr(incr(newHistory(), 1, "k0", 0, 1, history.OK), 0, "k0", 0.005, 1, history.OK), 1, 0, "", 1, 2},
		{"keys are separate", final(final(incr(incr(newHistory(), 1, "k0", 0, 1, history.OK), 0, "k1", 0, 1, history.OK), "k0", 10, 1), "k1", 11, 1), 0, 0, "", 2, 2},
		{"value taken from the invoke", newHistory().
			inv(0.1, 0, wr, "k0", val(1)).ok(0.2, 0, wr, "k0").inv(0.3, 1, wr, "k0", val(1)).ok(0.4, 1, wr, "k0").nemesis(0.5, "kill"), 1, 0, "", 1, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := checkLostUpdate(c.h.build())
			var dup, low int
			for _, v := range r.Violations {
				switch v.Kind {
				case duplicateWrite:
					dup++
				case lowFinalRead:
					low++
				}
			}
			if dup != c.dup || low != c.low || r.Count != dup+low || r.Keys != c.keys || r.AcceptedWrites != c.acc {
				t.Fatalf("got %+v", r)
			}
			want := Valid
			switch {
			case r.Count > 0:
				want = Invalid
			case strings.Contains(c.name, "unknown"):
				want = Unknown
			}
			if r.Valid != want {
				t.Fatalf("verdict %v with %d violations, want %v", r.Valid, r.Count, want)
			}
			if (r.Valid == Unknown) != (len(r.Unread) > 0 && r.Note != "") {
				t.Errorf("unknown verdict %v, but unread keys %v, note %q", r.Valid, r.Unread, r.Note)
			}
			if c.want != "" && r.Violations[0].Description != c.want {
				t.Errorf("description %q, want %q", r.Violations[0].Description, c.want)
			}
		})
	}
}

func TestStats(t *testing.T) {
	ops := newHistory().
		nemesis(0, "start-pause").
		inv(0.0, 0, acq, "k0").ok(1.0, 0, acq, "k0").       // 1s, ok
		inv(0.5, 1, acq, "k0").fail(0.7, 1, acq, "k0").     // 0.2s, fail
		inv(1.0, 1, acq, "k1").info(4.0, 1, acq, "k1").     // 3s, info
		inv(3.0, 0, rel, "k0").ok(3.1, 0, rel, "k0").       // k0 held 1.0-3.0
		inv(4.0, 2, acq, "k0").ok(6.0, 2, acq, "k0").       // 2s, ok; held 6.0-end
		inv(6.5, 2, wr, "k0", val(1)).ok(7.0, 2, wr, "k0"). // end at 10
		nemesis(10, "stop-pause").
		build()
	r := statsOf(ops)
	if r.Valid != Valid || r.Clients != 3 || r.Span != ns(10) || r.Holds != 2 || r.NemesisOps != 2 {
		t.Fatalf("got %+v", r)
	}
	if r.Ops[acq]["invoke"] != 4 || r.Ops[acq]["ok"] != 2 || r.Ops[acq]["fail"] != 1 || r.Ops[acq]["info"] != 1 || r.Ops["start-pause"]["info"] != 1 {
		t.Fatalf("ops %v", r.Ops)
	}
	if r.HoldsPerSecond != 0.2 || r.OpsPerSecond != 0.6 {
		t.Fatalf("rates %v holds/s, %v ops/s", r.HoldsPerSecond, r.OpsPerSecond)
	}
	if l := r.AcquireLatency; l.Count != 2 || l.P50 != ns(1) || l.P99 != ns(2) || l.Max != ns(2) {
		t.Fatalf("ok latency %+v", l)
	}
	if l := r.AcquireAll; l.Count != 4 || l.P50 != ns(1) || l.P90 != ns(3) || l.Max != ns(3) {
		t.Fatalf("all latency %+v", l)
	}
	// k0's no-holder time is the clients' pace (nobody asked, or the
	// granted acquire was on its way); k1 was asked for at 1s and never
	// granted: refused from then to the end.
	want := []KeyAvailability{{Key: "k0", Holds: 2, Unheld: ns(4), Fraction: 0.4}, {Key: "k1", Unheld: ns(10), Fraction: 1, Refused: ns(9), RefusedFraction: 0.9}}
	gb, _ := json.Marshal(r.Availability)
	wb, _ := json.Marshal(want)
	if !bytes.Equal(gb, wb) {
		t.Fatalf("availability %s, want %s", gb, wb)
	}
	if e := statsOf(nil); e.Valid != Valid || e.Span != 0 {
		t.Fatalf("empty: %+v", e)
	}
}

func TestCheck(t *testing.T) {
	ops := newHistory().hold(0, "k0", 0.1, 0.5, fence(1)).
		inv(0.2, 0, wr, "k0", fence(1), val(1)).ok(0.3, 0, wr, "k0", fence(1), val(1)).
		inv(1, 0, fr, "k0").ok(1.1, 0, fr, "k0", val(1)).build()
	c, err := Check(context.Background(), ops, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Verdicts()) != len(All) || c.Verdict() != Valid {
		t.Fatalf("verdicts %v", c.Verdicts())
	}
	if _, err := Check(context.Background(), ops, []string{"nope"}, Options{}); err == nil {
		t.Fatal("unknown checker accepted")
	}

	// A crashing checker is unknown, not a crashed harness.
	saved := runFencing
	defer func() { runFencing = saved }()
	runFencing = func([]history.Op) *FencingResult { panic("boom") }
	c, err = Check(context.Background(), ops, []string{NameMutex, NameFencing}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Fencing.Valid != Unknown || !strings.Contains(c.Fencing.Error, "boom") || c.Verdict() != Unknown || c.Mutex.Valid != Valid {
		t.Fatalf("got %+v, verdict %v", c.Fencing, c.Verdict())
	}
}

// nodes sets an acquire's value to the servers that granted it.
func nodes(ns ...string) opt {
	return func(o *history.Op) { o.Value = history.ObjectValue(map[string]any{"nodes": ns}) }
}
