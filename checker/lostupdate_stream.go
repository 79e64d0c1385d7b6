package checker

import (
	"fmt"
	"slices"

	"github.com/locktorture/locktorture/history"
)

// valueSet is a set of integers kept as sorted, disjoint, non-adjacent
// ranges: a counter's values 1, 2, 3, … take one range however many there
// are, which is what keeps the streaming lost-update checker's memory flat.
type valueSet []valueRange

// valueRange is the integers lo..hi.
type valueRange struct{ lo, hi int64 }

// find returns the first range whose hi is at least v.
func (s valueSet) find(v int64) int {
	i, _ := slices.BinarySearchFunc(s, v, func(r valueRange, v int64) int {
		switch {
		case r.hi < v:
			return -1
		case r.hi > v:
			return 1
		}
		return 0
	})
	return i
}

// has reports whether v is in the set.
func (s valueSet) has(v int64) bool {
	i := s.find(v)
	return i < len(s) && s[i].lo <= v
}

// add puts v in the set.
func (s *valueSet) add(v int64) {
	r := *s
	i := r.find(v)
	if i < len(r) && r[i].lo <= v {
		return
	}
	joinsLeft := i > 0 && v != minInt64 && r[i-1].hi == v-1
	joinsRight := i < len(r) && v != maxInt64 && r[i].lo == v+1
	switch {
	case joinsLeft && joinsRight:
		r[i-1].hi = r[i].hi
		r = slices.Delete(r, i, i+1)
	case joinsLeft:
		r[i-1].hi = v
	case joinsRight:
		r[i].lo = v
	default:
		r = slices.Insert(r, i, valueRange{v, v})
	}
	*s = r
}

const (
	minInt64 = -1 << 63
	maxInt64 = 1<<63 - 1
)

// luPend is a write or final-read invoke awaiting its completion.
type luPend struct {
	f, key string
	v      int64
	ok     bool // v is set
}

// luKey is the streaming lost-update state of one key.
type luKey struct {
	accepted    int
	once, twice valueSet // values accepted at least once, at least twice
	dups        int      // values accepted more than once
	final       bool
	finalV      int64
	finalIndex  int64
	// Filled only when collecting (see lostStream.want): the writers of
	// the duplicated values, by value, and the values in order of first write.
	writers map[int64][]luWrite
	order   []int64
}

// luWrite is one accepted write of a duplicated value.
type luWrite struct {
	process int
	index   int64
}

// lostStream is the lost-update checker fed one op at a time (after
// resolveTx), in per-key stretches (see Stream). It keeps, per key, the
// accepted values as ranges and counts the duplicated ones; the writers of
// the duplicated values, which the report lists, come from a second pass
// over the history (collecting, with want set) made only when there are
// duplicates. Its result equals checkLostUpdate's.
type lostStream struct {
	keys       map[string]*luKey
	pending    map[int]luPend
	finalReads int
	accepted   int
	// want, when set, makes this a collecting pass: the duplicated values
	// of each key the first pass found.
	want map[string]valueSet
}

func newLostStream() *lostStream {
	return &lostStream{keys: map[string]*luKey{}, pending: map[int]luPend{}}
}

// step applies op.
func (s *lostStream) step(op *history.Op) {
	if op.IsNemesis() || (op.F != history.Write && op.F != history.FinalRead) {
		return
	}
	if op.Type == history.Invoke {
		v, ok := op.Int()
		s.pending[op.Process] = luPend{op.F, op.Key, v, ok}
		return
	}
	inv, ok := s.pending[op.Process]
	if !ok || inv.f != op.F || inv.key != op.Key {
		return
	}
	delete(s.pending, op.Process)
	if op.Type != history.OK {
		return
	}
	k := s.keys[op.Key]
	if k == nil {
		k = &luKey{}
		s.keys[op.Key] = k
	}
	v, ok := op.Int()
	if !ok {
		v, ok = inv.v, inv.ok
	}
	if op.F == history.FinalRead {
		s.finalReads++
		if ok {
			k.final, k.finalV, k.finalIndex = true, v, op.Index
		}
		return
	}
	k.accepted++
	s.accepted++
	if !ok {
		return
	}
	if s.want != nil {
		if w := s.want[op.Key]; w.has(v) {
			if k.writers == nil {
				k.writers = map[int64][]luWrite{}
			}
			if _, seen := k.writers[v]; !seen {
				if len(k.order) >= maxListed {
					return
				}
				k.order = append(k.order, v)
			}
			k.writers[v] = append(k.writers[v], luWrite{op.Process, op.Index})
		}
		return
	}
	switch {
	case !k.once.has(v):
		k.once.add(v)
	case !k.twice.has(v):
		k.twice.add(v)
		k.dups++
	}
}

// duplicated returns each key's duplicated values, or nil when there are none.
func (s *lostStream) duplicated() map[string]valueSet {
	var out map[string]valueSet
	for name, k := range s.keys {
		if k.dups > 0 {
			if out == nil {
				out = map[string]valueSet{}
			}
			out[name] = k.twice
		}
	}
	return out
}

// finish returns the result; collected is the collecting pass's state
// when there were duplicates (nil otherwise).
func (s *lostStream) finish(collected *lostStream) *LostUpdateResult {
	res := &LostUpdateResult{Valid: Valid, Violations: []LostUpdateViolation{}, Keys: len(s.keys), AcceptedWrites: s.accepted, FinalReads: s.finalReads}
	add := func(l LostUpdateViolation) {
		if len(res.Violations) < maxListed {
			res.Violations = append(res.Violations, l)
		}
	}
	for _, name := range sortedKeys(s.keys) {
		k := s.keys[name]
		res.Count += k.dups
		if k.dups > 0 && collected != nil && collected.keys[name] != nil {
			c := collected.keys[name]
			for _, v := range c.order {
				ws := c.writers[v]
				l := LostUpdateViolation{Key: name, Kind: duplicateWrite, Value: v}
				for _, w := range ws {
					l.Processes = append(l.Processes, w.process)
					l.Indexes = append(l.Indexes, w.index)
				}
				l.Description = fmt.Sprintf("processes %s %s wrote %d to %s: %s",
					joinProcesses(l.Processes), map[bool]string{true: "both", false: "all"}[len(ws) == 2], v, name, increments(len(ws)-1, "was lost"))
				add(l)
			}
		}
		if k.final && k.finalV < int64(k.accepted) {
			res.Count++
			add(LostUpdateViolation{
				Key: name, Kind: lowFinalRead, Value: k.finalV, Indexes: []int64{k.finalIndex}, Accepted: k.accepted,
				Description: fmt.Sprintf("%s read %d at the end but %s accepted: %s",
					name, k.finalV, plural(k.accepted, "write was", "writes were"), increments(k.accepted-int(k.finalV), "lost")),
			})
		}
	}
	for _, name := range sortedKeys(s.keys) {
		if k := s.keys[name]; !k.final && k.accepted > 0 {
			res.Unread = append(res.Unread, name)
		}
	}
	res.settle()
	return res
}
