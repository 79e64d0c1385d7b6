package checker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// randomHolds makes n holds of up to keys keys and procs processes, with
// starts from a small range (so ties occur), in an order that is sorted
// with chance sortedP and shuffled otherwise.
func randomHolds(seed uint64, n, keys, procs int, sortedP float64) []Hold {
	r := rand.New(rand.NewPCG(seed, 1))
	hs := make([]Hold, n)
	for i := range hs {
		hs[i] = Hold{Process: r.IntN(procs), Key: fmt.Sprintf("k%d", r.IntN(keys)), Start: int64(r.IntN(2 * n)), End: int64(i)}
	}
	if r.Float64() < sortedP {
		slices.SortStableFunc(hs, func(a, b Hold) int { return compareHolds(&a, &b) })
	}
	return hs
}

// checkSortHolds holds sortHolds to the plain version on hs.
func checkSortHolds(t *testing.T, hs []Hold) {
	t.Helper()
	want := plainSortHolds(slices.Clone(hs))
	got := sortHolds(slices.Clone(hs))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sortHolds(%v)\n= %v\nwant %v", hs, got, want)
	}
}

// TestSortHoldsMatchesPlain: sorting in place gives the plain version's
// order, ties included.
func TestSortHoldsMatchesPlain(t *testing.T) {
	for seed := range uint64(300) {
		n := int(seed % 50)
		checkSortHolds(t, randomHolds(seed, n, 1+int(seed%5), 1+int(seed%4), 0.2))
	}
	// A negative control: a swapped pair is seen.
	hs := randomHolds(1, 20, 3, 3, 1)
	bad := slices.Clone(hs)
	bad[0], bad[len(bad)-1] = bad[len(bad)-1], bad[0]
	if reflect.DeepEqual(plainSortHolds(slices.Clone(hs)), bad) {
		t.Fatal("the comparison cannot see a swap")
	}
}

// FuzzSortHolds holds sortHolds to the plain version it replaced.
func FuzzSortHolds(f *testing.F) {
	f.Add(uint64(1), uint8(10), uint8(3), uint8(2), false)
	f.Add(uint64(2), uint8(200), uint8(9), uint8(5), true)
	f.Fuzz(func(t *testing.T, seed uint64, n, keys, procs uint8, sorted bool) {
		p := 0.0
		if sorted {
			p = 1
		}
		checkSortHolds(t, randomHolds(seed, int(n), 1+int(keys%16), 1+int(procs%8), p))
	})
}

// TestCheckSharesHolds: Check, which makes the holds once for mutex and
// stats, gives what Mutex and statsOf give alone.
func TestCheckSharesHolds(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 50 {
		ops := randomHistory(r, genConfig{procs: 2 + i%4, keys: 1 + i%3, steps: 300, buggy: 0.1, tick: int64(i % 3), complete: i%2 == 0, nemesis: 0.03})
		c, err := Check(context.Background(), ops, []string{NameMutex, NameStats}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if m := Mutex(ops); !reflect.DeepEqual(c.Mutex, m) {
			t.Fatalf("history %d: Check's mutex %+v, Mutex %+v", i, c.Mutex, m)
		}
		if s := statsOf(ops); !reflect.DeepEqual(c.Stats, s) {
			t.Fatalf("history %d: Check's stats %+v, Stats %+v", i, c.Stats, s)
		}
	}
}
