package checker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/history"
)

// streamCheck runs a Stream over ops, rescanning them when asked.
func streamCheck(t testing.TB, ops []history.Op) (Checkers, error) {
	t.Helper()
	s, err := NewStream(context.Background(), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range ops {
		s.Add(&ops[i])
	}
	return s.Result(func(add func(*history.Op)) error {
		for i := range ops {
			add(&ops[i])
		}
		return nil
	})
}

// sameAsBatch returns how Stream's results differ from the batch checkers'
// on ops ("" when they are the same, field for field), with segments of
// at least seg ops. A history Validate refuses may be refused by Stream
// too; one it accepts must not be.
func sameAsBatch(t testing.TB, ops []history.Op, seg int) string {
	t.Helper()
	saved := minSegment
	minSegment = seg
	defer func() { minSegment = saved }()
	got, err := streamCheck(t, ops)
	if errors.Is(err, ErrNotStreamable) && history.Validate(context.Background(), ops) != nil {
		return ""
	}
	if err != nil {
		return "stream: " + err.Error()
	}
	want, err := Check(context.Background(), ops, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f := plainFencing(ops); !sameJSON(f, want.Fencing) {
		return "Fencing differs from plainFencing:\n" + asJSON(want.Fencing) + "\n" + asJSON(f)
	}
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{NameMutex, got.Mutex, want.Mutex},
		{NameLinearizable, got.Linearizable, want.Linearizable},
		{NameFencing, got.Fencing, want.Fencing},
		{NameLostUpdate, got.LostUpdate, want.LostUpdate},
		{NameStats, got.Stats, want.Stats},
	} {
		if !sameJSON(c.got, c.want) {
			return c.name + " differs:\nstream " + asJSON(c.got) + "\nbatch  " + asJSON(c.want)
		}
	}
	return ""
}

func asJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func sameJSON(a, b any) bool { return asJSON(a) == asJSON(b) }

// TestStreamMatchesBatch holds Stream to the batch checkers on the golden
// histories and on random ones, cut into segments of every size.
func TestStreamMatchesBatch(t *testing.T) {
	for name, ops := range readGolden(t) {
		for _, seg := range []int{1, 2, 4096} {
			if d := sameAsBatch(t, ops, seg); d != "" {
				t.Errorf("%s (segments of %d): %s", name, seg, d)
			}
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 300 {
		ops := lockOpsHistory(r.Uint64(), r.Uint64(), uint8(r.Uint32()), uint8(r.Uint32()), uint16(r.Uint32()), uint8(r.Uint32()), uint8(r.Uint32()), i%2 == 0, uint8(i%5), uint8(i))
		if d := sameAsBatch(t, ops, []int{1, 3, 16, 4096}[i%4]); d != "" {
			t.Fatalf("random history %d: %s\n%s", i, d, dump(ops))
		}
	}
	// A negative control: a history that is not well formed is refused,
	// never judged wrong.
	ops := lockOpsHistory(1, 2, 3, 1, 400, 3, 10, true, 0, 0)
	ops = append(ops, history.Op{Index: int64(len(ops)), Time: ops[len(ops)-1].Time, Process: 0, Type: history.OK, F: history.Write, Key: "nope"})
	if _, err := streamCheck(t, ops); !errors.Is(err, ErrNotStreamable) {
		t.Fatalf("a completion with no invoke: %v, want ErrNotStreamable", err)
	}
}

// FuzzStreamMatchesBatch holds Stream to the batch checkers on random
// histories of any shape the generator makes (transactions, stray
// releases, every outcome, shared timestamps), cut into segments of any size.
func FuzzStreamMatchesBatch(f *testing.F) {
	f.Add(uint64(1), uint64(2), uint8(3), uint8(1), uint16(300), uint8(1), uint8(20), true, uint8(0), uint8(0), uint8(1))
	f.Add(uint64(7), uint64(9), uint8(5), uint8(2), uint16(1500), uint8(0), uint8(2), false, uint8(3), uint8(1), uint8(5))
	f.Add(uint64(11), uint64(13), uint8(2), uint8(3), uint16(800), uint8(5), uint8(0), true, uint8(6), uint8(2), uint8(64))
	f.Add(uint64(17), uint64(19), uint8(7), uint8(0), uint16(1999), uint8(2), uint8(40), false, uint8(1), uint8(0), uint8(2))
	f.Fuzz(func(t *testing.T, s1, s2 uint64, procs, keys uint8, steps uint16, tick, buggy uint8, complete bool, tx, shift, seg uint8) {
		ops := lockOpsHistory(s1, s2, procs, keys, steps, tick, buggy, complete, tx, shift)
		if d := sameAsBatch(t, ops, 1+int(seg)); d != "" {
			t.Fatalf("%s\n%s", d, dump(ops))
		}
	})
}

// TestLatencyHistogram checks the percentiles past latencyExact samples
// against the exact ones: within the histogram's 0.1%.
func TestLatencyHistogram(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	var l latencies
	var all []int64
	for range 3 * latencyExact {
		d := int64(r.ExpFloat64() * 2e6)
		l.add(d)
		all = append(all, d)
	}
	if l.hist == nil {
		t.Fatal("the histogram never took over")
	}
	got, want := l.result(), latency(all)
	if got.Count != want.Count || got.Max != want.Max {
		t.Fatalf("count/max %+v, want %+v", got, want)
	}
	for _, p := range [][2]int64{{got.P50, want.P50}, {got.P90, want.P90}, {got.P99, want.P99}} {
		if diff := p[0] - p[1]; diff < 0 && -diff > p[1]/1000+1 || diff > p[1]/1000+1 {
			t.Errorf("percentile %d, want %d within 0.1%% (%+v vs %+v)", p[0], p[1], got, want)
		}
	}
}

// TestStreamUndecided: a segment the linearizable checker cannot decide in
// its time limit makes it unknown, naming the segment's key, time span and
// the limit — never invalid, never skipped in silence.
func TestStreamUndecided(t *testing.T) {
	saved := minSegment
	minSegment = 64
	defer func() { minSegment = saved }()
	ops := realisticHistory(9, 6, 3, 20000)
	// A limit porcupine cannot meet: it gives up on every segment.
	s, err := NewStream(context.Background(), []string{NameLinearizable}, Options{LinearizableTimeout: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	for i := range ops {
		s.Add(&ops[i])
	}
	c, err := s.Result(nil)
	if err != nil {
		t.Fatal(err)
	}
	l := c.Linearizable
	if l.Valid != Unknown || len(l.UnknownKeys) == 0 || len(l.Undecided) == 0 {
		t.Fatalf("%+v", l)
	}
	u := l.Undecided[0]
	if u.Key == "" || u.To < u.From || u.Ops == 0 || !strings.Contains(u.Limit, "time limit") {
		t.Fatalf("undecided segment %+v", u)
	}
}

// TestStreamCutsContendedKeys: a key that clients keep asking for (8 of
// them on each key: one nearly always has an acquire in flight, and the
// last holder's release is in flight while the next is granted) is still
// cut into segments of about minSegment ops, so the Stream's memory does
// not grow with the history; and its results are the batch checkers'.
func TestStreamCutsContendedKeys(t *testing.T) {
	for _, c := range []struct {
		procs, keys, n, seg int
	}{
		{64, 8, 60000, 256},
		{16, 2, 40000, 512},
		{128, 16, 100000, 64},
	} {
		t.Run(fmt.Sprintf("%d clients %d keys", c.procs, c.keys), func(t *testing.T) {
			saved := minSegment
			minSegment = c.seg
			defer func() { minSegment = saved }()
			ops := realisticHistory(7, c.procs, c.keys, c.n)
			s, err := NewStream(context.Background(), nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			longest := 0
			for i := range ops {
				s.Add(&ops[i])
				for _, g := range s.keys {
					longest = max(longest, len(g.ops))
				}
			}
			if longest > 4*c.seg {
				t.Errorf("a key's segment grew to %d ops (segments of at least %d; the history has %d ops per key)", longest, c.seg, c.n/c.keys)
			}
			if d := sameAsBatch(t, ops, c.seg); d != "" {
				t.Error(d)
			}
		})
	}
}

// TestStreamKeyLookups: the Stream's keys, looked up by a hash of their
// last bytes before its map, and stats's counts, kept in a table for the
// contract's fs and types before a list for the rest, give the batch
// checkers' results on keys that share a slot, keys of one byte, the
// empty key and fs and types outside the contract.
func TestStreamKeyLookups(t *testing.T) {
	for name, keys := range map[string][]string{
		"one slot":   {"a-1x", "b-1x", "c-1x", "abcd-1x"},
		"short keys": {"a", "b", "", "ab"},
		"many keys":  {"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9", "k10", "k11", "k12", "k13", "k14", "k15", "k16", "k64", "k128"},
	} {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(8, uint64(len(keys))))
			b := newHistory()
			var free [7]float64 // when each process is done
			at := 0.0
			for i := range 3000 {
				p, k := i%7, keys[r.IntN(len(keys))]
				t0 := max(at, free[p])
				free[p] = t0 + 0.0006
				switch r.IntN(6) {
				case 0:
					b.inv(t0, p, "frobnicate", k).add(t0+0.0001, p, history.Type("maybe"), "frobnicate", k)
				case 1:
					b.inv(t0, p, history.Acquire, k).fail(t0+0.0001, p, history.Acquire, k, errMsg("busy"))
				case 2:
					b.nemesis(t0, "start-pause")
				default: // a hold that writes, and may not know whether its release went through
					f := fence(int64(i + 1))
					b.inv(t0, p, history.Acquire, k).ok(t0+0.0001, p, history.Acquire, k, f, lease(1))
					b.inv(t0+0.0002, p, history.Write, k, val(int64(i)), f).ok(t0+0.0003, p, history.Write, k, val(int64(i)), f)
					b.inv(t0+0.0004, p, history.Release, k)
					if r.IntN(4) == 0 {
						b.info(t0+0.0005, p, history.Release, k, errMsg("timeout"))
					} else {
						b.ok(t0+0.0005, p, history.Release, k)
					}
				}
				at += 0.0001 * float64(r.IntN(4))
			}
			ops := b.build()
			if _, err := streamCheck(t, ops); err != nil {
				t.Fatal(err)
			}
			for _, seg := range []int{1, 64, 4096} {
				if d := sameAsBatch(t, ops, seg); d != "" {
					t.Fatalf("segments of %d: %s", seg, d)
				}
			}
		})
	}
}

// TestStreamKeepsNoRefusedAcquire: a key's segment keeps no acquire that
// was refused (fail or info), invoke or completion — most of a busy key's
// ops, and nothing to any checker of a segment — and a granted acquire's
// invoke comes just before its ok; the results stay the batch checkers'.
func TestStreamKeepsNoRefusedAcquire(t *testing.T) {
	saved := minSegment
	minSegment = 1 << 30 // one segment per key: look at all it kept
	defer func() { minSegment = saved }()
	ops := realisticHistory(11, 24, 3, 20000)
	refused := 0
	for i := range ops {
		if ops[i].F == history.Acquire && (ops[i].Type == history.Fail || ops[i].Type == history.Info) {
			refused++
		}
	}
	s, err := NewStream(context.Background(), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range ops {
		s.Add(&ops[i])
	}
	kept := 0
	for _, g := range s.keys {
		kept += len(g.ops)
		for i, op := range g.ops {
			switch {
			case op.F != history.Acquire:
			case op.Type == history.Invoke:
				if i+1 >= len(g.ops) || g.ops[i+1].F != history.Acquire || g.ops[i+1].Type != history.OK || g.ops[i+1].Process != op.Process {
					t.Fatalf("key %s keeps an acquire invoke (op %d) not followed by its ok", g.key, op.Index)
				}
			case op.Type != history.OK:
				t.Fatalf("key %s keeps a refused acquire: op %d", g.key, op.Index)
			}
		}
	}
	if refused < len(ops)/4 || kept > len(ops)-2*refused {
		t.Fatalf("%d ops, %d acquires refused, %d kept", len(ops), refused, kept)
	}
	if d := sameAsBatch(t, ops, 64); d != "" {
		t.Fatal(d)
	}
}
