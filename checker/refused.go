package checker

import (
	"github.com/locktorture/locktorture/history"
)

// refusals measures, for each key, the part of its no-holder time in which
// a client had asked for it and was not granted it yet: from the first
// acquire invoked on the key while nobody held it to the invoke of the
// acquire that was granted (or the end of the history). The rest of a
// key's no-holder time — from a release to the next acquire anyone asks
// for, and the granted acquire's own round trip — is the clients' own
// pace, not the lock's doing. Fed op by op in history order, it keeps a
// few values per key.
type refusals struct {
	keys map[string]*keyWant
}

// keyWant is one key's state: who holds it, since when it has been wanted
// and not had (-1: not), and the refused time so far.
type keyWant struct {
	holders holderSet
	want    int64
	refused int64
}

// add applies op; invTime is, on a completion, its invoke's time (the
// op's own when it had none).
func (r *refusals) add(op *history.Op, invTime int64) {
	if op.IsNemesis() || op.Key == "" {
		return
	}
	r.key(op.Key).add(op, invTime)
}

// key returns key's state, new when it has none.
func (r *refusals) key(key string) *keyWant {
	if r.keys == nil {
		r.keys = map[string]*keyWant{}
	}
	k := r.keys[key]
	if k == nil {
		k = &keyWant{want: -1}
		r.keys[key] = k
	}
	return k
}

// add applies op, a client op on the key, as refusals.add does.
func (k *keyWant) add(op *history.Op, invTime int64) {
	if op.F == history.Acquire && op.Type == history.Invoke && k.holders.len() == 0 && k.want < 0 {
		k.want = op.Time
	}
	switch holdEvent(op) {
	case holdStarts:
		if k.holders.len() == 0 && k.want >= 0 {
			k.refused += max(0, invTime-k.want)
			k.want = -1
		}
		k.holders.add(op.Process)
	case holdEnds:
		if k.holders.remove(op.Process) && k.holders.len() == 0 {
			k.want = -1
		}
	}
}

// refused returns key's refused time, counting a want still open at last.
func (r *refusals) refused(key string, last int64) int64 {
	k := r.keys[key]
	if k == nil {
		return 0
	}
	n := k.refused
	if k.holders.len() == 0 && k.want >= 0 {
		n += max(0, last-k.want)
	}
	return n
}
