package checker

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/locktorture/locktorture/history"
)

// sameLockOperations reports how lockOperations' result differs from the
// plain version's on ops, or "".
func sameLockOperations(ops []history.Op, meta bool) string {
	got, want := lockOperations(ops), plainLockOperations(ops, meta)
	if len(got) != len(want) {
		return fmt.Sprintf("%d keys, want %d", len(got), len(want))
	}
	for k, ws := range want {
		los, ok := got[k]
		if !ok {
			return fmt.Sprintf("key %q missing", k)
		}
		gs := porcupineOps(nil, los, meta)
		if len(gs) != len(ws) {
			return fmt.Sprintf("key %q: %d operations, want %d", k, len(gs), len(ws))
		}
		for i := range ws {
			if d := sameOperation(gs[i], ws[i]); d != "" {
				return fmt.Sprintf("key %q, operation %d: %s", k, i, d)
			}
		}
	}
	return ""
}

// sameOperation compares one operation of each version.
func sameOperation(g, w porcupine.Operation) string {
	if g.ClientId != w.ClientId || g.Call != w.Call || g.Return != w.Return || g.Output != w.Output || g.Metadata != w.Metadata {
		return fmt.Sprintf("%+v, want %+v", g, w)
	}
	gi, wi := g.Input.(*lockInput), w.Input.(plainInput)
	switch {
	case gi.release != wi.release, gi.process != wi.process, gi.key != wi.key, outcomeTypes[gi.outcome] != wi.outcome:
		return fmt.Sprintf("input %+v, want %+v", *gi, wi)
	case (gi.fence == nil) != (wi.fence == nil), gi.fence != nil && *gi.fence != *wi.fence:
		return fmt.Sprintf("input fence %v, want %v", gi.fence, wi.fence)
	}
	return ""
}

// lockOpsHistory makes a random history for the comparison: randomHistory's,
// with some ops made transactional (tx) and process numbers moved (shift:
// 0 as they are, 1 negative, 2 past the pending table's slice).
func lockOpsHistory(seed1, seed2 uint64, procs, keys uint8, steps uint16, tick uint8, buggy uint8, complete bool, tx uint8, shift uint8) []history.Op {
	r := rand.New(rand.NewPCG(seed1, seed2))
	cfg := genConfig{
		procs:    1 + int(procs%8),
		keys:     1 + int(keys%4),
		steps:    int(steps % 2000),
		buggy:    float64(buggy%64) / 100,
		tick:     int64(tick % 8),
		complete: complete,
		nemesis:  0.03,
	}
	ops := randomHistory(r, cfg)
	for i := range ops {
		op := &ops[i]
		if tx > 0 && int(tx)%7 == i%7 && (op.F == history.Acquire || op.F == history.Write) {
			op.Tx = true
		}
		if op.IsNemesis() {
			continue
		}
		switch shift % 3 {
		case 1:
			op.Process = -2 - op.Process
		case 2:
			op.Process += smallProcesses - 2
		}
	}
	return ops
}

// TestLockOperationsMatchPlain holds lockOperations to the plain version
// it replaced on the golden histories and on random ones.
func TestLockOperationsMatchPlain(t *testing.T) {
	for name, ops := range readGolden(t) {
		for _, meta := range []bool{false, true} {
			if d := sameLockOperations(ops, meta); d != "" {
				t.Errorf("%s (meta %v): %s", name, meta, d)
			}
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		ops := lockOpsHistory(r.Uint64(), r.Uint64(), uint8(r.Uint32()), uint8(r.Uint32()), uint16(r.Uint32()), uint8(r.Uint32()), uint8(r.Uint32()), i%2 == 0, uint8(i%5), uint8(i))
		if d := sameLockOperations(ops, i%3 == 0); d != "" {
			t.Fatalf("random history %d: %s\n%s", i, d, dump(ops))
		}
	}
	// A negative control: the comparison sees a changed time.
	ops := lockOpsHistory(1, 2, 3, 1, 400, 3, 10, true, 0, 0)
	got, want := lockOperations(ops), plainLockOperations(ops, false)
	for k, ws := range want {
		if len(ws) > 0 {
			g, w := porcupineOps(nil, got[k][:1], false)[0], ws[0]
			if d := sameOperation(g, w); d != "" {
				t.Fatal(d)
			}
			w.Return++
			if sameOperation(g, w) == "" {
				t.Fatal("sameOperation does not see a changed return time")
			}
			break
		}
	}
}

// FuzzLockOperations holds lockOperations to the plain version it replaced
// on random histories of any shape the generator makes.
func FuzzLockOperations(f *testing.F) {
	f.Add(uint64(1), uint64(2), uint8(3), uint8(1), uint16(300), uint8(1), uint8(20), true, uint8(0), uint8(0), false)
	f.Add(uint64(7), uint64(9), uint8(5), uint8(2), uint16(1500), uint8(0), uint8(2), false, uint8(3), uint8(1), true)
	f.Add(uint64(11), uint64(13), uint8(2), uint8(3), uint16(800), uint8(5), uint8(0), true, uint8(6), uint8(2), false)
	f.Fuzz(func(t *testing.T, s1, s2 uint64, procs, keys uint8, steps uint16, tick, buggy uint8, complete bool, tx, shift uint8, meta bool) {
		ops := lockOpsHistory(s1, s2, procs, keys, steps, tick, buggy, complete, tx, shift)
		if d := sameLockOperations(ops, meta); d != "" {
			t.Fatalf("%s\n%s", d, dump(ops))
		}
	})
}
