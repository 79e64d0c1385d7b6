package checker

import (
	"slices"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/locktorture/locktorture/history"
)

// latencyExact is how many latencies a latencies keeps exactly before it
// moves them into a histogram: below it the percentiles are exact (as
// stats's), above it within 0.1% (three significant digits) in bounded
// memory. A variable for tests.
var latencyExact = 1 << 16

// latencyMax is the largest latency the histogram tells apart (an hour);
// longer ones count as an hour, but Max stays exact.
const latencyMax = int64(3600e9)

// latencies gathers durations for percentiles in bounded memory.
type latencies struct {
	exact []int64
	hist  *hdrhistogram.Histogram
	n     int
	max   int64
}

// add records one duration.
func (l *latencies) add(d int64) {
	l.n++
	l.max = max(l.max, d)
	if l.hist == nil {
		if len(l.exact) < latencyExact {
			l.exact = append(l.exact, d)
			return
		}
		l.hist = hdrhistogram.New(1, latencyMax, 3)
		for _, e := range l.exact {
			l.record(e)
		}
		l.exact = nil
	}
	l.record(d)
}

// record puts d in the histogram, clamped to its range.
func (l *latencies) record(d int64) {
	_ = l.hist.RecordValue(min(max(d, 1), latencyMax))
}

// result returns the percentiles.
func (l *latencies) result() Latency {
	if l.hist == nil {
		return latency(l.exact)
	}
	at := func(q float64) int64 { return min(l.hist.ValueAtQuantile(q), l.max) }
	return Latency{Count: l.n, P50: at(50), P90: at(90), P99: at(99), Max: l.max}
}

// fType is an op's f and type, which stats counts ops by.
type fType struct {
	f string
	t history.Type
}

// statsStream is the stats checker fed op by op (add, in history order)
// and segment by segment (holds, for each key's holds); its result equals
// stats's but for latency percentiles past latencyExact samples. The
// Stream hands each op's key's state to add (see key), so that no op
// looks its key up here.
type statsStream struct {
	table       [len(countedFs)][len(countedTypes)]int // the ops of the fs and types of the contract
	counts      []fCount                               // the others: few, and a slice beats a map keyed by two strings
	clients     procTable[bool]
	keys        map[string]bool
	pending     procTable[statsPend]
	okLat       latencies
	allLat      latencies
	completions int
	nemesis     int
	holdCount   map[string]int
	covered     map[string]int64
	ref         refusals
}

// countedFs and countedTypes are the fs and types statsStream counts in
// its table: a client op's (see fIndex and typeIndex).
var (
	countedFs    = [...]string{history.Acquire, history.Release, history.Extend, history.Read, history.Write, history.FinalRead, history.Lost}
	countedTypes = [...]history.Type{history.Invoke, history.OK, history.Fail, history.Info}
)

// fIndex returns f's place in countedFs, or -1.
func fIndex(f string) int {
	switch f {
	case history.Acquire:
		return 0
	case history.Release:
		return 1
	case history.Extend:
		return 2
	case history.Read:
		return 3
	case history.Write:
		return 4
	case history.FinalRead:
		return 5
	case history.Lost:
		return 6
	}
	return -1
}

// typeIndex returns t's place in countedTypes, or -1.
func typeIndex(t history.Type) int {
	switch t {
	case history.Invoke:
		return 0
	case history.OK:
		return 1
	case history.Fail:
		return 2
	case history.Info:
		return 3
	}
	return -1
}

// fCount counts the ops of one f and type.
type fCount struct {
	fType
	n int
}

// statsPend is a process's invoke awaiting its completion.
type statsPend struct {
	f    string
	time int64
}

func newStatsStream() *statsStream {
	return &statsStream{keys: map[string]bool{}, holdCount: map[string]int{}, covered: map[string]int64{}}
}

// count counts op by its f and type.
func (s *statsStream) count(op *history.Op) {
	if f, t := fIndex(op.F), typeIndex(op.Type); f >= 0 && t >= 0 {
		s.table[f][t]++
		return
	}
	for i := range s.counts {
		if c := &s.counts[i]; c.t == op.Type && c.f == op.F {
			c.n++
			if i > 0 { // keep the common ones in front
				s.counts[i-1], s.counts[i] = s.counts[i], s.counts[i-1]
			}
			return
		}
	}
	s.counts = append(s.counts, fCount{fType{op.F, op.Type}, 1})
}

// key returns the state add needs of a key ("" has none), counting the
// key as seen: the Stream asks once for each key a client op names, and
// hands it to add with every op on the key.
func (s *statsStream) key(key string) *keyWant {
	if key == "" {
		return nil
	}
	s.keys[key] = true
	return s.ref.key(key)
}

// add counts one op; k is its key's state (see key), nil for a nemesis op
// or an op with no key.
func (s *statsStream) add(op *history.Op, k *keyWant) {
	s.count(op)
	if op.IsNemesis() {
		s.nemesis++
		return
	}
	if op.Process >= 0 {
		*s.clients.at(op.Process) = true
	}
	slot := s.pending.at(op.Process)
	if op.Type == history.Invoke {
		if k != nil {
			k.add(op, op.Time)
		}
		*slot = statsPend{op.F, op.Time}
		return
	}
	s.completions++
	inv := *slot
	if inv.f == "" || inv.f != op.F {
		if k != nil {
			k.add(op, op.Time)
		}
		return
	}
	if k != nil {
		k.add(op, inv.time)
	}
	*slot = statsPend{}
	if op.F == history.Acquire {
		d := op.Time - inv.time
		s.allLat.add(d)
		if op.Type == history.OK {
			s.okLat.add(d)
		}
	}
}

// holds counts one segment's holds of key, and the time they covered.
// Segments of a key never overlap in time, so their covers add up.
func (s *statsStream) holds(key string, hs []Hold) {
	var curStart, curEnd int64
	for i, h := range hs {
		s.holdCount[h.Key]++
		st, e := h.Start, max(h.End, h.Start)
		switch {
		case i == 0:
			curStart, curEnd = st, e
		case st > curEnd:
			s.covered[key] += curEnd - curStart
			curStart, curEnd = st, e
		default:
			curEnd = max(curEnd, e)
		}
	}
	if len(hs) > 0 {
		s.covered[key] += curEnd - curStart
	}
}

// result returns the stats of a history of n ops from first to last.
func (s *statsStream) result(first, last, n int64) *StatsResult {
	res := &StatsResult{Valid: Valid, Ops: map[string]map[string]int{}, Availability: []KeyAvailability{}}
	if n == 0 {
		return res
	}
	counts := s.counts
	for f, byType := range s.table {
		for t, n := range byType {
			if n > 0 {
				counts = append(counts, fCount{fType{countedFs[f], countedTypes[t]}, n})
			}
		}
	}
	for _, c := range counts {
		byType := res.Ops[c.f]
		if byType == nil {
			byType = map[string]int{}
			res.Ops[c.f] = byType
		}
		byType[string(c.t)] += c.n
	}
	s.clients.each(func(_ int, seen *bool) {
		if *seen {
			res.Clients++
		}
	})
	res.NemesisOps = s.nemesis
	res.Span = last - first
	for _, c := range s.holdCount {
		res.Holds += c
	}
	if res.Span > 0 {
		sec := float64(res.Span) / 1e9
		res.HoldsPerSecond = float64(res.Holds) / sec
		res.OpsPerSecond = float64(s.completions) / sec
	}
	res.AcquireLatency = s.okLat.result()
	res.AcquireAll = s.allLat.result()
	keys := make([]string, 0, len(s.keys))
	for k := range s.keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		a := KeyAvailability{Key: k, Holds: s.holdCount[k], Unheld: res.Span - s.covered[k]}
		a.Refused = min(s.ref.refused(k, last), a.Unheld)
		if res.Span > 0 {
			a.Fraction = float64(a.Unheld) / float64(res.Span)
			a.RefusedFraction = float64(a.Refused) / float64(res.Span)
		}
		res.Availability = append(res.Availability, a)
	}
	return res
}

// procTable holds a value per process: in a slice for the usual numbers
// (0 to 65535), in a map for the others.
type procTable[V any] struct {
	small []V
	other map[int]*V
}

// at returns the process's value, made zero when new.
func (t *procTable[V]) at(p int) *V {
	if p >= 0 && p < 1<<16 {
		if p >= len(t.small) {
			t.small = append(t.small, make([]V, p+1-len(t.small))...)
		}
		return &t.small[p]
	}
	v := t.other[p]
	if v == nil {
		if t.other == nil {
			t.other = map[int]*V{}
		}
		v = new(V)
		t.other[p] = v
	}
	return v
}

// each calls f with every process's value.
func (t *procTable[V]) each(f func(p int, v *V)) {
	for p := range t.small {
		f(p, &t.small[p])
	}
	for p, v := range t.other {
		f(p, v)
	}
}
