package checker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/locktorture/locktorture/history"
)

// sameMutex returns how mutex's result on holds differs from plainMutex's
// ("" when they are the same, byte for byte as JSON).
func sameMutex(ops []history.Op, holds []Hold) string {
	got := mutex(ops, func() []Hold { return slices.Clone(holds) })
	want := plainMutex(ops, func() []Hold { return slices.Clone(holds) })
	if g, w := asJSON(got), asJSON(want); g != w {
		return fmt.Sprintf("mutex differs from plainMutex:\ngot  %.2000s\nwant %.2000s", g, w)
	}
	return ""
}

// randomMutexHolds makes n holds of up to keys keys and procs processes,
// sorted as Holds sorts them, in a short stretch of time so that many
// overlap and share instants. Their leases are of every kind: none, a
// lease end alone (a Hold made by hand), one to four grants and
// extensions, some already run out when made; with weird set, also what
// only a history whose time goes backwards makes: a hold that ends before
// it starts, extensions out of time order, a process overlapping itself.
func randomMutexHolds(seed uint64, n, keys, procs int, weird bool) []Hold {
	r := rand.New(rand.NewPCG(seed, 2))
	hs := make([]Hold, n)
	for i := range hs {
		start := int64(r.IntN(60))
		h := Hold{Process: r.IntN(procs), Key: fmt.Sprintf("k%d", r.IntN(keys)), Start: start, End: start + int64(r.IntN(25))}
		switch {
		case r.IntN(7) == 0:
			h.Open, h.End = true, 90
		case weird && r.IntN(6) == 0:
			h.End = start - int64(r.IntN(6))
		}
		if r.IntN(5) == 0 {
			h.Fence = history.Int64(int64(i))
		}
		switch r.IntN(4) {
		case 0: // no lease
		case 1: // made by hand: its last lease alone
			h.LeaseEnd, h.LeaseMS = history.Int64(start+int64(r.IntN(30)-4)), history.Int64(int64(r.IntN(20)))
		default:
			at := start
			for k := range 1 + r.IntN(4) {
				if k > 0 {
					at += int64(r.IntN(10))
				}
				if weird && r.IntN(4) == 0 {
					at = start + int64(r.IntN(40)-10)
				}
				ms := int64(r.IntN(16) - 3)
				h.leases = append(h.leases, leaseSpan{at: at, end: at + ms, ms: ms})
			}
			h.LeaseMS = history.Int64(h.leases[0].ms)
			h.LeaseEnd = history.Int64(h.leases[len(h.leases)-1].end)
		}
		hs[i] = h
	}
	if !weird {
		// One hold per process and key at a time, as Holds makes them.
		slices.SortStableFunc(hs, func(a, b Hold) int { return compareHolds(&a, &b) })
		last := map[holdKey]int64{}
		for i := range hs {
			h := &hs[i]
			hk := holdKey{h.Process, h.Key}
			if e, ok := last[hk]; ok && h.Start < e {
				h.Process += procs // another process
				hk.process = h.Process
			}
			if e, ok := last[hk]; ok && h.Start < e {
				h.Start = e
				h.End = max(h.End, e)
			}
			last[hk] = h.End
			if h.Open {
				last[hk] = 1 << 62
			}
		}
	}
	return sortHolds(hs)
}

// TestMutexMatchesPlain holds mutex to the plain version it replaced: on
// the golden histories (their results byte for byte), on random histories,
// on crowds of holders past the listing cap, and on random holds of every
// shape.
func TestMutexMatchesPlain(t *testing.T) {
	for name, ops := range readGolden(t) {
		if d := sameMutex(ops, Holds(ops)); d != "" {
			t.Errorf("%s: %s", name, d)
		}
		c, err := Check(context.Background(), ops, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if want := plainMutex(ops, func() []Hold { return Holds(ops) }); asJSON(c.Mutex) != asJSON(want) {
			t.Errorf("%s: Check's mutex differs from plainMutex", name)
		}
	}
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 150 {
		ops := lockOpsHistory(r.Uint64(), r.Uint64(), uint8(r.Uint32()), uint8(r.Uint32()), uint16(r.Uint32()), uint8(r.Uint32()), uint8(r.Uint32()), i%2 == 0, uint8(i%5), uint8(i))
		if d := sameMutex(ops, Holds(ops)); d != "" {
			t.Fatalf("random history %d: %s\n%s", i, d, dump(ops))
		}
	}
	for _, n := range []int{2, 45, 46, 47, 120} { // 45 holders make 990 overlaps, 47 make 1081
		for _, concurrent := range []bool{false, true} {
			ops := crowdHistory(n, concurrent)
			if d := sameMutex(ops, Holds(ops)); d != "" {
				t.Fatalf("a crowd of %d (concurrent %v): %s", n, concurrent, d)
			}
		}
	}
	for seed := range uint64(150) {
		hs := randomMutexHolds(seed, int(seed*7%250), 1+int(seed%3), 2+int(seed%40), seed%2 == 1)
		if d := sameMutex(nil, hs); d != "" {
			t.Fatalf("random holds %d: %s", seed, d)
		}
	}
	// A negative control: the comparison sees one overlap fewer.
	hs := randomMutexHolds(3, 50, 1, 10, false)
	want := plainMutex(nil, func() []Hold { return slices.Clone(hs) })
	got := mutex(nil, func() []Hold { return slices.Clone(hs) })
	if want.Count < 2 {
		t.Fatalf("the control has %d overlaps", want.Count)
	}
	got.Count--
	if asJSON(got) == asJSON(want) {
		t.Fatal("the comparison cannot see a changed count")
	}
}

// FuzzMutexMatchesPlain holds mutex to the plain version it replaced, on
// random histories, crowds and random holds of every shape.
func FuzzMutexMatchesPlain(f *testing.F) {
	f.Add(uint64(1), uint64(2), uint8(3), uint8(1), uint16(300), uint8(1), uint8(20), true, uint8(0), uint8(0))
	f.Add(uint64(7), uint64(9), uint8(5), uint8(2), uint16(1500), uint8(0), uint8(2), false, uint8(3), uint8(1))
	f.Add(uint64(11), uint64(13), uint8(40), uint8(0), uint16(250), uint8(5), uint8(0), true, uint8(6), uint8(2))
	f.Add(uint64(17), uint64(19), uint8(200), uint8(2), uint16(599), uint8(2), uint8(40), false, uint8(1), uint8(3))
	f.Fuzz(func(t *testing.T, s1, s2 uint64, procs, keys uint8, steps uint16, tick, buggy uint8, complete bool, tx, shape uint8) {
		switch shape % 4 {
		case 0: // a random history
			ops := lockOpsHistory(s1, s2, procs, keys, steps, tick, buggy, complete, tx, shape/4)
			if d := sameMutex(ops, Holds(ops)); d != "" {
				t.Fatalf("%s\n%s", d, dump(ops))
			}
		case 1: // a crowd
			ops := crowdHistory(int(procs), complete)
			if d := sameMutex(ops, Holds(ops)); d != "" {
				t.Fatal(d)
			}
		default: // random holds, well formed (2) or not (3)
			hs := randomMutexHolds(s1, int(steps%600), 1+int(keys%4), 2+int(procs), shape%4 == 3)
			if d := sameMutex(nil, hs); d != "" {
				t.Fatal(d)
			}
		}
	})
}

// TestMutexCrowdMemory: on a crowd of holders of one key, the mutex
// checker counts every overlap without making a list of them: what it
// allocates grows with the holders, not with their pairs (the plain
// version's list of 2,000 holders' 2 million pairs took 32 MB and more).
func TestMutexCrowdMemory(t *testing.T) {
	for _, n := range []int{2000, 20000} {
		ops := crowdHistory(n, false)
		holds := Holds(ops)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m := mutex(ops, func() []Hold { return holds })
		runtime.ReadMemStats(&after)
		if m.Count != n*(n-1)/2 || m.StaleHolders+m.DoubleGrants != m.Count || m.StaleHolders == 0 || m.DoubleGrants == 0 || len(m.Violations) != maxListed {
			t.Fatalf("%d holders: %d overlaps (%d stale, %d double), %d listed", n, m.Count, m.StaleHolders, m.DoubleGrants, len(m.Violations))
		}
		if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(4<<20+400*n); got > limit {
			t.Errorf("%d holders: the mutex checker allocated %d bytes, want at most %d", n, got, limit)
		}
	}
}
