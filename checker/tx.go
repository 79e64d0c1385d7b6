package checker

import "github.com/locktorture/locktorture/history"

// resolveTx judges each write made inside the lock's transaction (Tx) by
// the outcome of the COMMIT that decides it — the same process's next
// release of the key: a write recorded ok stays ok only if that release
// completed ok; it becomes info when the release's outcome is unknown (or
// the history ends first), and fail when the release certainly failed
// (the transaction rolled back). Histories without Tx writes are returned
// as they are, without a copy.
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
		case op.F == history.Write && op.Tx && op.Type == history.OK:
			pending[k] = append(pending[k], i)
		case op.F == history.Release:
			for _, j := range pending[k] {
				switch op.Type {
				case history.Fail:
					out[j].Type, out[j].Error = history.Fail, "rolled back: its transaction did not commit ("+op.Error+")"
				case history.Info:
					out[j].Type, out[j].Error = history.Info, "its transaction's commit is unknown ("+op.Error+")"
				}
			}
			delete(pending, k)
		}
	}
	for _, js := range pending {
		for _, j := range js {
			out[j].Type, out[j].Error = history.Info, "its transaction never committed before the history ended"
		}
	}
	return out
}
