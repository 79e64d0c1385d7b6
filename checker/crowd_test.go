package checker

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/locktorture/locktorture/history"
)

// crowdHistory is n processes holding one key (k0) at once, as the
// reliability sweep's broken lock made them: each acquires in turn (a
// lease of n/10 ms, 100µs between ops, so the early holders' leases run
// out while the later ones acquire: stale holders and double grants both),
// every seventh renews an earlier holder's lease, then all release. With
// concurrent set, every acquire is invoked before the first completes, so
// porcupine has every order of them to try.
func crowdHistory(n int, concurrent bool) []history.Op {
	ops := make([]history.Op, 0, 5*n)
	lease := max(1, int64(n)/10)
	var now int64
	add := func(p int, ty history.Type, f string, ms int64) {
		now += 100_000
		op := history.Op{Index: int64(len(ops)), Time: now, Process: p, Type: ty, F: f, Key: "k0"}
		if ms > 0 {
			op.LeaseMS = history.Int64(ms)
		}
		ops = append(ops, op)
	}
	if concurrent {
		for p := range n {
			add(p, history.Invoke, history.Acquire, 0)
		}
	}
	for p := range n {
		if !concurrent {
			add(p, history.Invoke, history.Acquire, 0)
		}
		add(p, history.OK, history.Acquire, lease)
		if p%7 == 0 && p >= 10 {
			add(p-10, history.Invoke, history.Extend, 0)
			add(p-10, history.OK, history.Extend, lease)
		}
	}
	for p := range n {
		add(p, history.Invoke, history.Release, 0)
		add(p, history.OK, history.Release, 0)
	}
	return ops
}

// TestCrowdHistory: the crowd is a history of the contract, and every
// pair of its holders overlaps, some stale, some not.
func TestCrowdHistory(t *testing.T) {
	for _, concurrent := range []bool{false, true} {
		ops := crowdHistory(300, concurrent)
		if err := history.Validate(context.Background(), ops); err != nil {
			t.Fatal(err)
		}
		m := Mutex(ops)
		if m.Holds != 300 || m.Count != 300*299/2 || m.StaleHolders == 0 || m.DoubleGrants == 0 || len(m.Violations) != maxListed {
			t.Fatalf("concurrent %v: %d holds, %d overlaps (%d stale, %d double), %d listed", concurrent, m.Holds, m.Count, m.StaleHolders, m.DoubleGrants, len(m.Violations))
		}
	}
}

// TestLinearizableOnACrowd: the linearizable checker on a crowd of
// holders ends, within its time limit, invalid or unknown (never valid),
// and the mutex checker finds the crowd invalid.
func TestLinearizableOnACrowd(t *testing.T) {
	for _, concurrent := range []bool{false, true} {
		ops := crowdHistory(5000, concurrent)
		c, err := Check(context.Background(), ops, []string{NameMutex, NameLinearizable}, Options{LinearizableTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if c.Mutex.Valid != Invalid || c.Mutex.Count != 5000*4999/2 || c.Linearizable.Valid == Valid {
			t.Fatalf("concurrent %v: mutex %v (%d overlaps), linearizable %+v", concurrent, c.Mutex.Valid, c.Mutex.Count, c.Linearizable)
		}
	}
}

// benchmarkCrowd measures the mutex checker on a crowd of n holders.
func benchmarkCrowd(b *testing.B, n int) {
	ops := crowdHistory(n, false)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if m := Mutex(ops); m.Count != n*(n-1)/2 {
			b.Fatalf("%d overlaps", m.Count)
		}
	}
}

func BenchmarkMutexCrowd5000(b *testing.B)  { benchmarkCrowd(b, 5000) }
func BenchmarkMutexCrowd20000(b *testing.B) { benchmarkCrowd(b, 20000) }

// TestStreamOnACrowd: the streaming checkers (what analyze runs) judge a
// crowd of 20,000 holders of one key as the batch checkers do.
func TestStreamOnACrowd(t *testing.T) {
	ops := crowdHistory(20000, true)
	names := []string{NameMutex, NameFencing, NameLostUpdate, NameStats}
	s, err := NewStream(context.Background(), names, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range ops {
		s.Add(&ops[i])
	}
	got, err := s.Result(nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Check(context.Background(), ops, names, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(got, want) || got.Mutex.Count != 20000*19999/2 {
		t.Fatalf("stream %.600s\nbatch  %.600s", asJSON(got), asJSON(want))
	}
}

// BenchmarkStreamCrowd runs the streaming checkers but linearizable (whose
// time limit bounds it) over a crowd of n holders of one key.
func BenchmarkStreamCrowd(b *testing.B) {
	for _, n := range []int{5000, 20000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			ops := crowdHistory(n, true)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				s, _ := NewStream(context.Background(), []string{NameMutex, NameFencing, NameLostUpdate, NameStats}, Options{})
				for i := range ops {
					s.Add(&ops[i])
				}
				if c, err := s.Result(nil); err != nil || c.Mutex.Count != n*(n-1)/2 {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestHolderSet holds holderSet to a map through random adds and removes
// that take it past holderIndexAt and back to empty, and again.
func TestHolderSet(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var s holderSet
	want := map[int]bool{}
	for i := range 20000 {
		p := r.IntN(60)
		if (i/2000)%2 == 0 { // grow, then shrink
			if s.add(p) == want[p] {
				t.Fatalf("add %d: %v, set had it: %v", p, !want[p], want[p])
			}
			want[p] = true
		} else {
			if s.remove(p) != want[p] {
				t.Fatalf("remove %d: set had it: %v", p, want[p])
			}
			delete(want, p)
		}
		if s.len() != len(want) {
			t.Fatalf("step %d: %d holders, want %d", i, s.len(), len(want))
		}
		for q := range 60 {
			if (s.index(q) >= 0) != want[q] {
				t.Fatalf("step %d: %d in the set: %v, want %v", i, q, s.index(q) >= 0, want[q])
			}
		}
	}
}
