package checker

import "github.com/locktorture/locktorture/history"

// resolveTx judges each op made inside the lock's transaction (Tx) by the
// outcome of the COMMIT that decides it — the same process's next release
// of the key.
//
// A write recorded ok stays ok only if that release completed ok; it
// becomes info when the release's outcome is unknown (or the history ends
// first), and fail when the release certainly failed (the transaction
// rolled back).
//
// An acquire ok marked Tx is a hold whose every effect commits with the
// release: when the release certainly failed, the transaction — lock,
// reads and writes — rolled back as if it never was, so the grant is
// judged a fail (a void hold: the client believed in it, but nothing it
// did through it took effect). An unknown release keeps the hold.
//
// Histories without Tx ops are returned as they are, without a copy.
func resolveTx(ops []history.Op) []history.Op {
	found := false
	for i := range ops {
		if ops[i].Tx {
			found = true
			break
		}
	}
	if !found {
		return ops
	}
	out := make([]history.Op, len(ops))
	copy(out, ops)
	type pk struct {
		p   int
		key string
	}
	pending := map[pk][]int{} // tx write oks waiting for their commit
	for i := range out {
		op := &out[i]
		if op.IsNemesis() || op.Type == history.Invoke {
			continue
		}
		k := pk{op.Process, op.Key}
		switch {
		case (op.F == history.Write || op.F == history.Acquire) && op.Tx && op.Type == history.OK:
			pending[k] = append(pending[k], i)
		case op.F == history.Release:
			for _, j := range pending[k] {
				switch {
				case op.Type == history.Fail:
					out[j].Type, out[j].Error = history.Fail, "rolled back: its transaction did not commit ("+op.Error+")"
				case op.Type == history.Info && out[j].F == history.Write:
					out[j].Type, out[j].Error = history.Info, "its transaction's commit is unknown ("+op.Error+")"
				}
			}
			delete(pending, k)
		}
	}
	for _, js := range pending {
		for _, j := range js {
			if out[j].F == history.Write {
				out[j].Type, out[j].Error = history.Info, "its transaction never committed before the history ended"
			}
		}
	}
	return out
}

// rolledBackHolds counts the grants resolveTx judged void.
func rolledBackHolds(ops, resolved []history.Op) int {
	if len(ops) == 0 || &ops[0] == &resolved[0] {
		return 0
	}
	n := 0
	for i := range ops {
		if ops[i].F == history.Acquire && ops[i].Type == history.OK && resolved[i].Type != history.OK {
			n++
		}
	}
	return n
}
