package checker

import (
	"math"
	"slices"

	"github.com/locktorture/locktorture/history"
)

// statsOf summarises a history: op counts, clients, span, holds and
// throughput, acquire latency percentiles, and for each key how long nobody
// held it. It decides nothing: the result is always valid.
func statsOf(ops []history.Op) *StatsResult {
	return stats(ops, func() []Hold { return Holds(ops) })
}

// stats is statsOf with the history's holds (Holds(ops)) made by holds,
// called when needed.
func stats(ops []history.Op, holds func() []Hold) *StatsResult {
	res := &StatsResult{Valid: Valid, Ops: map[string]map[string]int{}, Availability: []KeyAvailability{}}
	if len(ops) == 0 {
		return res
	}
	first, last := ops[0].Time, ops[0].Time
	type fType struct {
		f string
		t history.Type
	}
	counts := map[fType]int{}
	clients := map[int]bool{} // processes past the usual range
	var seen []bool           // processes 0..65535 that did something
	keys := map[string]bool{}
	// Pending invocations by process: a slice for the usual small process
	// numbers, a map for the rest.
	var pendSlice []*history.Op
	pendMap := map[int]*history.Op{}
	pending := func(p int) **history.Op {
		if p >= 0 && p < 1<<16 {
			if p >= len(pendSlice) {
				pendSlice = append(pendSlice, make([]*history.Op, p+1-len(pendSlice))...)
			}
			return &pendSlice[p]
		}
		o := pendMap[p]
		return &o
	}
	var okLat, allLat []int64
	var ref refusals
	completions := 0
	lastKey := ""
	for i := range ops {
		op := &ops[i]
		first, last = min(first, op.Time), max(last, op.Time)
		counts[fType{op.F, op.Type}]++
		if op.IsNemesis() {
			res.NemesisOps++
			continue
		}
		switch {
		case op.Process >= 0 && op.Process < 1<<16:
			if op.Process >= len(seen) {
				seen = append(seen, make([]bool, op.Process+1-len(seen))...)
			}
			seen[op.Process] = true
		case op.Process >= 0:
			clients[op.Process] = true
		}
		if op.Key != "" && op.Key != lastKey {
			keys[op.Key], lastKey = true, op.Key
		}
		slot := pending(op.Process)
		if op.Type == history.Invoke {
			ref.add(op, op.Time)
			*slot = op
			if op.Process < 0 || op.Process >= 1<<16 {
				pendMap[op.Process] = op
			}
			continue
		}
		completions++
		inv := *slot
		if inv == nil || inv.F != op.F {
			ref.add(op, op.Time)
			continue
		}
		ref.add(op, inv.Time)
		*slot = nil
		delete(pendMap, op.Process)
		if op.F == history.Acquire {
			d := op.Time - inv.Time
			allLat = append(allLat, d)
			if op.Type == history.OK {
				okLat = append(okLat, d)
			}
		}
	}
	for ft, n := range counts {
		byType := res.Ops[ft.f]
		if byType == nil {
			byType = map[string]int{}
			res.Ops[ft.f] = byType
		}
		byType[string(ft.t)] += n
	}
	res.Clients = len(clients)
	for _, s := range seen {
		if s {
			res.Clients++
		}
	}
	res.Span = last - first
	hs := holds()
	res.Holds = len(hs)
	if res.Span > 0 {
		s := float64(res.Span) / 1e9
		res.HoldsPerSecond = float64(res.Holds) / s
		res.OpsPerSecond = float64(completions) / s
	}
	res.AcquireLatency = latency(okLat)
	res.AcquireAll = latency(allLat)

	// Availability: the part of [first, last] no hold of the key covers.
	// Holds come sorted by key, then start.
	covered := map[string]int64{}
	count := map[string]int{}
	var key string
	var curStart, curEnd int64
	flush := func() { covered[key] += curEnd - curStart }
	for i, h := range hs {
		count[h.Key]++
		s, e := max(h.Start, first), min(h.End, last)
		if e < s {
			e = s
		}
		if i == 0 || h.Key != key {
			if i > 0 {
				flush()
			}
			key, curStart, curEnd = h.Key, s, e
			continue
		}
		if s > curEnd {
			flush()
			curStart, curEnd = s, e
		} else {
			curEnd = max(curEnd, e)
		}
	}
	if len(hs) > 0 {
		flush()
	}
	for _, k := range sortedKeys(keys) {
		a := KeyAvailability{Key: k, Holds: count[k], Unheld: res.Span - covered[k]}
		a.Refused = min(ref.refused(k, last), a.Unheld)
		if res.Span > 0 {
			a.Fraction = float64(a.Unheld) / float64(res.Span)
			a.RefusedFraction = float64(a.Refused) / float64(res.Span)
		}
		res.Availability = append(res.Availability, a)
	}
	return res
}

// latency computes nearest-rank percentiles of ds (which it sorts).
func latency(ds []int64) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	slices.Sort(ds)
	at := func(p float64) int64 {
		i := int(math.Ceil(p*float64(len(ds)))) - 1
		return ds[min(max(i, 0), len(ds)-1)]
	}
	return Latency{Count: len(ds), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: ds[len(ds)-1]}
}
