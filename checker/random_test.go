package checker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/locktorture/locktorture/history"
)

// genConfig shapes a random history.
type genConfig struct {
	procs, keys, steps int
	// buggy is the chance that the simulated lock service grants a key
	// that is already held: the source of overlaps.
	buggy float64
	// tick is the largest time step between ops, in ns; small ticks make
	// many ops share a timestamp.
	tick int64
	// complete finishes every outstanding op at the end.
	complete bool
	// nemesis is the chance of a nemesis op at each step.
	nemesis float64
}

// genProc is one simulated client.
type genProc struct {
	outstanding *history.Op // the invoke awaiting completion, or nil
	key         string      // the key held, or ""
	value       int64       // the last value read
}

// randomHistory simulates clients taking locks from a lock service that is
// wrong with probability cfg.buggy, with every outcome (ok, fail, info) on
// every kind of op, stray releases, extends, reads, writes and nemesis ops.
func randomHistory(r *rand.Rand, cfg genConfig) []history.Op {
	ops := make([]history.Op, 0, cfg.steps+cfg.procs)
	var now int64
	emit := func(o history.Op) *history.Op {
		o.Index, o.Time = int64(len(ops)), now
		ops = append(ops, o)
		return &ops[len(ops)-1]
	}
	owner := map[string]int{} // the service's view: key -> owner
	procs := make([]genProc, cfg.procs)
	fence := int64(0)
	values := map[string]int64{}
	lease := func() *int64 {
		if r.IntN(3) == 0 {
			return nil
		}
		return history.Int64(int64(1 + r.IntN(5)))
	}
	outcome := func(okP float64) history.Type {
		x := r.Float64()
		switch {
		case x < okP:
			return history.OK
		case x < okP+(1-okP)/2:
			return history.Fail
		}
		return history.Info
	}
	complete := func(p int) {
		pr := &procs[p]
		inv := *pr.outstanding
		pr.outstanding = nil
		out := history.Op{Process: p, F: inv.F, Key: inv.Key}
		switch inv.F {
		case history.Acquire:
			o, held := owner[inv.Key]
			free := !held || o == p || r.Float64() < cfg.buggy
			switch {
			case free && r.IntN(8) > 0:
				out.Type = history.OK
				fence++
				out.Fence, out.LeaseMS = history.Int64(fence), lease()
				owner[inv.Key] = p
				pr.key = inv.Key
			case r.IntN(3) == 0:
				out.Type, out.Error = history.Info, "timeout"
				if free && r.IntN(2) == 0 {
					owner[inv.Key] = p // taken on the server, unknown to the client
				}
			default:
				out.Type, out.Error = history.Fail, "busy"
			}
		case history.Release:
			out.Type = outcome(0.8)
			if out.Type == history.OK || (out.Type == history.Info && r.IntN(2) == 0) {
				if owner[inv.Key] == p {
					delete(owner, inv.Key)
				}
			}
			pr.key = ""
		case history.Extend:
			out.Type = outcome(0.7)
			if out.Type == history.OK {
				out.LeaseMS = lease()
			}
		case history.Read:
			out.Type = outcome(0.9)
			if out.Type == history.OK {
				out.Value = history.IntValue(values[inv.Key])
				pr.value = values[inv.Key]
			}
		case history.Write:
			out.Type = outcome(0.8)
			if out.Type == history.Fail && r.IntN(2) == 0 {
				out.Error = "stale fence"
			}
			if out.Type == history.OK {
				values[inv.Key] = pr.value + 1
			}
		}
		emit(out)
	}
	invoke := func(p int, f, key string) {
		o := history.Op{Process: p, Type: history.Invoke, F: f, Key: key}
		if f == history.Write {
			o.Value = history.IntValue(procs[p].value + 1)
			o.Fence = history.Int64(fence - int64(r.IntN(3)))
		}
		procs[p].outstanding = emit(o)
		// emit may move ops; keep a copy instead of a pointer into it.
		c := ops[len(ops)-1]
		procs[p].outstanding = &c
	}
	for range cfg.steps {
		now += r.Int64N(cfg.tick + 1)
		if r.Float64() < cfg.nemesis {
			emit(history.Op{Process: history.NemesisProcess, Type: history.Info, F: "start-pause", Value: history.ObjectValue(map[string]int{"process": r.IntN(cfg.procs)})})
			continue
		}
		p := r.IntN(cfg.procs)
		pr := &procs[p]
		switch {
		case pr.outstanding != nil:
			complete(p)
		case pr.key == "":
			key := fmt.Sprintf("k%d", r.IntN(cfg.keys))
			if r.IntN(10) == 0 {
				invoke(p, history.Release, key) // a stray release
			} else {
				invoke(p, history.Acquire, key)
			}
		default:
			switch x := r.IntN(21); {
			case x < 7:
				invoke(p, history.Release, pr.key)
			case x < 9:
				invoke(p, history.Extend, pr.key)
			case x < 13:
				invoke(p, history.Read, pr.key)
			case x < 18:
				invoke(p, history.Write, pr.key)
			case x < 19:
				invoke(p, history.Acquire, pr.key) // acquire again while holding
			case x == 20:
				// The client learns it lost the lock (an invoke and its ok
				// at one time); it still releases later, as the harness
				// does. The server may have let it go, or not yet.
				emit(history.Op{Process: p, Type: history.Invoke, F: history.Lost, Key: pr.key})
				emit(history.Op{Process: p, Type: history.OK, F: history.Lost, Key: pr.key})
				if owner[pr.key] == p && r.IntN(2) == 0 {
					delete(owner, pr.key)
				}
			default:
				key := fmt.Sprintf("k%d", r.IntN(cfg.keys)) // a second key
				invoke(p, history.Acquire, key)
			}
		}
	}
	if cfg.complete {
		for p := range procs {
			if procs[p].outstanding != nil {
				now += r.Int64N(cfg.tick + 1)
				complete(p)
			}
		}
	}
	return ops
}

func TestRandomHistoriesAreWellFormed(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		ops := randomHistory(r, genConfig{procs: 4, keys: 2, steps: 300, buggy: 0.2, tick: 2, complete: i%2 == 0, nemesis: 0.05})
		if err := history.Validate(context.Background(), ops); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMutexAndLinearizableAgree checks the two mutex checkers against each
// other on many random histories, complete and not, with many ops sharing
// timestamps (so zero-length overlaps and holds occur).
func TestMutexAndLinearizableAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 7))
	saved := minChunk
	defer func() { minChunk = saved }()
	var valid, invalid int
	for i := range agreeRuns {
		cfg := genConfig{
			procs:    2 + r.IntN(5),
			keys:     1 + r.IntN(3),
			steps:    10 + r.IntN(200),
			buggy:    []float64{0, 0.02, 0.2}[r.IntN(3)],
			tick:     []int64{0, 1, 3, 1000}[r.IntN(4)],
			complete: r.IntN(4) > 0,
			nemesis:  0.03,
		}
		ops := randomHistory(r, cfg)
		// Cut the keys' histories into chunks as small as possible, too.
		minChunk = []int{1, 2, 8, 512}[i%4]
		m := Mutex(ops)
		l := checkLinearizable(context.Background(), ops, 0)
		if l.Valid == Unknown {
			t.Fatalf("history %d: linearizable ran out of time", i)
		}
		if m.Valid != l.Valid {
			var bad []string
			for _, v := range m.Violations {
				bad = append(bad, v.Description)
			}
			t.Fatalf("history %d (%+v, chunks of %d): mutex %v %q, linearizable %v %v\n%s", i, cfg, minChunk, m.Valid, bad, l.Valid, l.BadKeys, dump(ops))
		}
		if m.Valid == Valid {
			valid++
		} else {
			invalid++
		}
	}
	t.Logf("%d valid and %d invalid random histories", valid, invalid)
	if valid < 300 || invalid < 300 {
		t.Fatalf("generator too one-sided: %d valid, %d invalid", valid, invalid)
	}
}

func dump(ops []history.Op) string {
	s := ""
	for _, o := range ops {
		if o.F == history.Acquire || o.F == history.Release || o.F == history.Lost {
			s += fmt.Sprintf("%d t=%d p%d %s %s %s\n", o.Index, o.Time, o.Process, o.Type, o.F, o.Key)
		}
	}
	return s
}

// agreeRuns is how many random histories TestMutexAndLinearizableAgree tries.
var agreeRuns = 3000
