package checker

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/locktorture/locktorture/history"
)

// defaultLinearizableTimeout is the time limit checkLinearizable uses when given zero.
const defaultLinearizableTimeout = 30 * time.Second

// lockInput is one lock operation as porcupine sees it. Operations carry a
// pointer to theirs (see lockOperations), so that giving one to porcupine
// boxes nothing.
type lockInput struct {
	process int
	fence   *int64
	key     string
	outcome outcome
	release bool // a release, or a lost op (lost is set too): the owner lets go
	lost    bool
}

// letsGo reports whether f is a lock op by which a holder lets go of its
// key: a release, or a lost op (the client learned the lock was gone).
func letsGo(f string) bool { return f == history.Release || f == history.Lost }

// outcome is a lock operation's completion type, for the visualization.
type outcome uint8

// The outcomes, in the order of outcomeTypes.
const (
	outcomeOK outcome = iota
	outcomeFail
	outcomeInfo
)

var outcomeTypes = [...]history.Type{outcomeOK: history.OK, outcomeFail: history.Fail, outcomeInfo: history.Info}

// outcomeOf returns the outcome of completion type t (info for anything
// but ok and fail).
func outcomeOf(t history.Type) outcome {
	switch t {
	case history.OK:
		return outcomeOK
	case history.Fail:
		return outcomeFail
	}
	return outcomeInfo
}

// freeState is the model state free, boxed once.
var freeState any = free

// free is the model state of a key nobody holds; otherwise it is the owner.
const free = -1

// lockModel is an owner-aware mutex of one key, in the client's belief: an
// acquire that completed ok needs the key free (or already owned by the same
// process) and makes the caller its owner; a release by the owner frees it,
// a release by anyone else changes nothing. The state is the owner, or free.
var lockModel = porcupine.Model{
	Partition: partitionByKey,
	Init:      func() any { return free },
	Step: func(state, input, _ any) (bool, any) {
		owner, in := state.(int), input.(*lockInput)
		if in.release {
			if owner == in.process {
				return true, freeState
			}
			return true, state
		}
		if owner == free || owner == in.process {
			return true, in.process
		}
		return false, state
	},
	Hash: func(state any) uint64 { return uint64(state.(int) + 1) },
	DescribeOperation: func(input, _ any) string {
		in := input.(*lockInput)
		f := history.Acquire
		switch {
		case in.lost:
			f = history.Lost
		case in.release:
			f = history.Release
		}
		return fmt.Sprintf("p%d %s %s -> %s%s", in.process, f, in.key, outcomeTypes[in.outcome], fenceSuffix(in.fence))
	},
	DescribeState: func(state any) string {
		if owner := state.(int); owner != free {
			return fmt.Sprintf("held by p%d", owner)
		}
		return "free"
	},
}

// partitionByKey splits lock operations by key, in order of keys.
func partitionByKey(ops []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	for _, op := range ops {
		k := op.Input.(*lockInput).key
		byKey[k] = append(byKey[k], op)
	}
	out := make([][]porcupine.Operation, 0, len(byKey))
	for _, k := range sortedKeys(byKey) {
		out = append(out, byKey[k])
	}
	return out
}

// lockEvent is the call or the return of one lock operation of a key.
type lockEvent struct {
	time  int64
	pos   int   // position in the history, for program order at equal times
	op    int32 // index of the operation in the key's list
	start int32 // the hold this acquire return starts, or -1
	end   int32 // the hold this release call ends, or -1
	ret   bool  // a return, else a call
}

// keyLocks gathers one key's lock operations, their inputs, where they
// stand in the history and the key's holds.
type keyLocks struct {
	n       int // lock operations at most (see lockOperations)
	ops     []lockOp
	marks   []lockMarks   // ops[i]'s are marks[i]
	holds   []span        // from the acquire ok to the release invoke
	holding map[int]int32 // process -> its open hold, an index into holds
}

// lockOp is one lock operation of a key, as lockOperations gathers it.
// Porcupine's Operation is made from it only when its stretch of the
// history is checked (see porcupineOps): a quarter of a million of them
// take 72 bytes each this way, not 112.
type lockOp struct {
	in        lockInput
	call, ret int64   // as renumbered (see orderTies)
	real      opTimes // the history's times
}

// porcupineOps appends ops to dst as porcupine's operations, each Input
// pointing at its op's input; with meta, each carries its real times as
// metadata.
func porcupineOps(dst []porcupine.Operation, ops []lockOp, meta bool) []porcupine.Operation {
	for i := range ops {
		o := &ops[i]
		op := porcupine.Operation{ClientId: o.in.process, Input: &o.in, Call: o.call, Return: o.ret}
		if meta {
			op.Metadata = o.real
		}
		dst = append(dst, op)
	}
	return dst
}

// lockMarks place a lock operation in the history, for orderTies: the
// positions of its call and return, the hold its call (a release invoke)
// ends and the hold its return (an acquire ok) starts, or -1.
type lockMarks struct {
	callPos, retPos int
	ends, starts    int32
}

// process returns the process of event e.
func (kl *keyLocks) process(e lockEvent) int { return kl.ops[e.op].in.process }

// span is a hold's start and end; an open one never ends.
type span struct {
	start, end int64
	open       bool
}

// pendingLock is a lock invoke awaiting its completion.
type pendingLock struct {
	op   *history.Op
	pos  int
	ends int32 // the hold its release invoke ends, or -1
}

// pendingLocks holds each process's outstanding lock invoke: a slice for
// the usual small process numbers, a map for the rest.
type pendingLocks struct {
	small []pendingLock // by process; op nil: none
	big   map[int]pendingLock
}

// smallProcesses bounds the process numbers pendingLocks keeps in its slice.
const smallProcesses = 1 << 16

func (p *pendingLocks) get(proc int) (pendingLock, bool) {
	if proc >= 0 && proc < smallProcesses {
		if proc < len(p.small) && p.small[proc].op != nil {
			return p.small[proc], true
		}
		return pendingLock{}, false
	}
	pl, ok := p.big[proc]
	return pl, ok
}

func (p *pendingLocks) set(proc int, pl pendingLock) {
	if proc >= 0 && proc < smallProcesses {
		if proc >= len(p.small) {
			p.small = append(p.small, make([]pendingLock, proc+1-len(p.small))...)
		}
		p.small[proc] = pl
		return
	}
	if p.big == nil {
		p.big = map[int]pendingLock{}
	}
	p.big[proc] = pl
}

func (p *pendingLocks) del(proc int) {
	if proc >= 0 && proc < smallProcesses {
		if proc < len(p.small) {
			p.small[proc] = pendingLock{}
		}
		return
	}
	delete(p.big, proc)
}

// sorted returns every outstanding invoke, in order of process.
func (p *pendingLocks) sorted() []pendingLock {
	var out []pendingLock
	for _, pl := range p.big {
		out = append(out, pl)
	}
	for _, pl := range p.small {
		if pl.op != nil {
			out = append(out, pl)
		}
	}
	slices.SortFunc(out, func(a, b pendingLock) int { return cmp.Compare(a.op.Process, b.op.Process) })
	return out
}

// lockOperations turns a history into porcupine operations, by key. Only
// acquires that completed ok are kept (a failed or indeterminate acquire gave
// the client no hold); every release is kept, whatever its outcome, since the
// client stops believing it holds the lock when it invokes one. A release
// still pending at the end returns at the last op's time. Other ops are not
// lock operations.
//
// Times are then renumbered (see orderTies); only their order matters to
// porcupine.
//
// A million-op history has a quarter of a million lock operations, so this
// allocates little per operation: a first pass counts each key's (at most
// one per acquire ok and per release invoke) so that every slice is made
// once; porcupine's operations, whose Input points at the lockOp's own
// rather than boxing one, are made only for the stretch being checked (see
// porcupineOps); and the events orderTies sorts are made one key at a time.
func lockOperations(ops []history.Op) map[string][]lockOp {
	return lockOperationsOf(resolveTx(ops))
}

// lockOperationsOf is lockOperations of a history resolveTx has judged
// already.
func lockOperationsOf(ops []history.Op) map[string][]lockOp {
	keys := map[string]*keyLocks{}
	var cur *keyLocks // the key of the op before, looked up once
	curKey := ""
	keyOf := func(k string) *keyLocks {
		if cur == nil || k != curKey {
			cur, curKey = keys[k], k
		}
		return cur
	}
	for i := range ops {
		op := &ops[i]
		if op.IsNemesis() || !isLockOp(op) {
			continue
		}
		kl := keyOf(op.Key)
		if kl == nil {
			kl = &keyLocks{}
			keys[op.Key], cur = kl, kl
		}
		kl.n++
	}
	for _, kl := range keys {
		kl.ops = make([]lockOp, 0, kl.n)
		kl.marks = make([]lockMarks, 0, kl.n)
		kl.holding = map[int]int32{}
	}
	var pending pendingLocks // each process's outstanding lock invoke
	var last int64
	add := func(pl pendingLock, oc outcome, ret int64, retPos int, fence *int64) {
		inv := pl.op
		kl := keyOf(inv.Key)
		in := lockInput{release: letsGo(inv.F), lost: inv.F == history.Lost, process: inv.Process, key: inv.Key, outcome: oc, fence: fence}
		kl.ops = append(kl.ops, lockOp{in: in, call: inv.Time, ret: ret, real: opTimes{call: inv.Time, ret: ret}})
		m := lockMarks{callPos: pl.pos, retPos: retPos, ends: pl.ends, starts: -1}
		if !in.release {
			if _, held := kl.holding[inv.Process]; !held {
				kl.holding[inv.Process] = int32(len(kl.holds))
				m.starts = int32(len(kl.holds))
				kl.holds = append(kl.holds, span{start: ret, open: true})
			}
		}
		kl.marks = append(kl.marks, m)
	}
	for i := range ops {
		op := &ops[i]
		last = max(last, op.Time)
		if op.IsNemesis() || (op.F != history.Acquire && !letsGo(op.F)) {
			continue
		}
		if op.Type == history.Invoke {
			pl := pendingLock{op: op, pos: i, ends: -1}
			if letsGo(op.F) {
				// The hold ends at the release (or lost) invoke.
				kl := keyOf(op.Key)
				if h, ok := kl.holding[op.Process]; ok {
					pl.ends = h
					kl.holds[h].end = op.Time
					kl.holds[h].open = false
					delete(kl.holding, op.Process)
				}
			}
			pending.set(op.Process, pl)
			continue
		}
		pl, ok := pending.get(op.Process)
		if ok && (pl.op.F != op.F || pl.op.Key != op.Key) {
			ok = false
		}
		if ok {
			pending.del(op.Process)
		}
		if op.F != history.Acquire || op.Type != history.OK {
			if ok && letsGo(op.F) {
				add(pl, outcomeOf(op.Type), op.Time, i, nil)
			}
			continue
		}
		if !ok { // an acquire ok without its invoke: take it as instant
			pl = pendingLock{op: op, pos: i, ends: -1}
		}
		fence := op.Fence
		if fence == nil {
			fence = pl.op.Fence
		}
		add(pl, outcomeOK, op.Time, i, fence)
	}
	for _, pl := range pending.sorted() {
		if letsGo(pl.op.F) {
			add(pl, outcomeInfo, last, len(ops), nil)
		}
	}
	out := make(map[string][]lockOp, len(keys))
	for k, kl := range keys {
		if len(kl.ops) == 0 {
			continue
		}
		orderTies(kl)
		out[k] = kl.ops
	}
	return out
}

// orderTies renumbers a key's times so that porcupine, which sees only
// intervals, answers exactly the mutex checker's question even when events
// share a timestamp. Porcupine takes [call, return] as closed intervals, so
// two events at one instant may be linearized in either order. That is right
// between processes (a hold may end and another begin at the same
// nanosecond: a hand-off), but wrong within one process, whose ops happen in
// program order. So events at one instant are spread over distinct slots,
// kept in program order within each process, in three phases: first every
// process's events up to a release that ends a hold begun earlier; then, one
// process after another, everything else (holds that begin and end at this
// instant); last, every acquire return that begins a hold lasting past it,
// and what follows. A hold ending at an instant thus comes before any hold
// beginning at it, as in the mutex checker.
//
// It frees the key's marks and holds, which nothing needs after it.
func orderTies(kl *keyLocks) {
	ev := make([]lockEvent, 0, 2*len(kl.ops))
	for i, m := range kl.marks {
		o := &kl.ops[i]
		ev = append(ev,
			lockEvent{time: o.call, pos: m.callPos, op: int32(i), start: -1, end: m.ends},
			lockEvent{time: o.ret, pos: m.retPos, op: int32(i), ret: true, start: m.starts, end: -1})
	}
	kl.marks, kl.holding = nil, nil
	defer func() { kl.holds = nil }()
	slices.SortStableFunc(ev, func(a, b lockEvent) int {
		if c := cmp.Compare(a.time, b.time); c != 0 {
			return c
		}
		return cmp.Compare(a.pos, b.pos)
	})
	// Slots per instant: the largest group of events sharing one.
	width := 1
	for i := 0; i < len(ev); {
		j := i
		for j < len(ev) && ev[j].time == ev[i].time {
			j++
		}
		width = max(width, j-i)
		i = j
	}
	endAt := map[int]int{}   // process -> position in group of its last hold-ending call
	startAt := map[int]int{} // process -> position in group of its hold-starting return
	instant := int64(0)
	for i := 0; i < len(ev); instant++ {
		t := ev[i].time
		j := i
		for j < len(ev) && ev[j].time == t {
			j++
		}
		group := ev[i:j]
		if len(group) == 1 { // the usual case: nothing to order
			setTime(kl, group[0], instant*int64(width))
			i = j
			continue
		}
		clear(endAt)
		clear(startAt)
		for g, e := range group {
			if e.end >= 0 && kl.holds[e.end].start < t {
				endAt[kl.process(e)] = g
			}
			if e.start >= 0 {
				if h := kl.holds[e.start]; h.open || h.end > t {
					if _, seen := startAt[kl.process(e)]; !seen {
						startAt[kl.process(e)] = g
					}
				}
			}
		}
		order := make([]int, 0, len(group)) // group positions in slot order
		for pass := int8(1); pass <= 3; pass++ {
			from := len(order)
			for g, e := range group {
				ph := int8(2)
				if at, ok := endAt[kl.process(e)]; ok && g <= at {
					ph = 1
				} else if at, ok := startAt[kl.process(e)]; ok && g >= at {
					ph = 3
				}
				if ph == pass {
					order = append(order, g)
				}
			}
			if pass == 2 {
				slices.SortStableFunc(order[from:], func(a, b int) int {
					return cmp.Compare(kl.process(group[a]), kl.process(group[b]))
				})
			}
		}
		for slot, g := range order {
			setTime(kl, group[g], instant*int64(width)+int64(slot))
		}
		i = j
	}
}

// setTime gives an event its new time.
func setTime(kl *keyLocks, e lockEvent, at int64) {
	if e.ret {
		kl.ops[e.op].ret = at
	} else {
		kl.ops[e.op].call = at
	}
}

// minChunk is the fewest operations checkLinearizable gives porcupine at once,
// when a key's history can be cut (a variable for tests).
var minChunk = 512

// chunk is a stretch of one key's lock operations that porcupine can check
// on its own, from a known initial state.
type chunk struct {
	key  string
	init int // owner at the start, or free
	ops  []lockOp
}

// splitKey cuts a key's lock operations into chunks of at least least
// operations (but the last). It cuts only where no operation is in flight
// and at most one process's last lock operation is an acquire: there every
// linearization of what came before ends in the same state (that process
// owns the key, or nobody does), because each process's operations keep
// their order. So the key is linearizable exactly when every chunk is, from
// that state. The lock model is deterministic, which is what makes this
// work; it keeps porcupine's cost linear in the length of the history.
func splitKey(key string, ops []lockOp, least int) []chunk {
	slices.SortFunc(ops, func(a, b lockOp) int { return cmp.Compare(a.call, b.call) })
	var out []chunk
	holding := map[int]bool{} // processes whose last lock op so far is an acquire
	init, start := free, 0
	lastReturn := int64(math.MinInt64)
	for j := range ops {
		op := &ops[j]
		if j-start >= least && lastReturn < op.call && len(holding) <= 1 {
			out = append(out, chunk{key, init, ops[start:j]})
			init, start = free, j
			for p := range holding {
				init = p
			}
		}
		lastReturn = max(lastReturn, op.ret)
		if op.in.release {
			delete(holding, op.in.process)
		} else {
			holding[op.in.process] = true
		}
	}
	return append(out, chunk{key, init, ops[start:]})
}

// checkLinearizable asks porcupine whether the lock operations of every key are
// linearizable with respect to an owner-aware mutex (see lockModel). Keys,
// and stretches of a key's history between quiet moments (see splitKey), are
// checked independently and in parallel, within timeout overall (zero means
// defaultLinearizableTimeout) and while ctx lasts. A key found illegal makes
// the result invalid (BadKeys); otherwise a key that ran out of time makes it
// unknown (UnknownKeys). It agrees with Mutex on every history.
func checkLinearizable(ctx context.Context, ops []history.Op, timeout time.Duration) *LinearizableResult {
	return linearizableOf(ctx, resolveTx(ops), timeout)
}

// linearizableOf is checkLinearizable of a history resolveTx has judged
// already.
func linearizableOf(ctx context.Context, ops []history.Op, timeout time.Duration) *LinearizableResult {
	if timeout <= 0 {
		timeout = defaultLinearizableTimeout
	}
	res := &LinearizableResult{Valid: Valid, TimeoutMS: timeout.Milliseconds()}
	byKey := lockOperationsOf(ops)
	keys := sortedKeys(byKey)
	res.Keys = len(keys)
	var chunks []chunk
	for _, k := range keys {
		res.Ops += len(byKey[k])
		chunks = append(chunks, splitKey(k, byKey[k], minChunk)...)
	}
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}

	type verdict struct {
		chunk int
		r     porcupine.CheckResult
	}
	work := make(chan int)
	results := make(chan verdict, len(chunks))
	go func() {
		defer close(work)
		for i := range chunks {
			select {
			case work <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range min(runtime.GOMAXPROCS(0), len(chunks)) {
		go func() {
			var buf []porcupine.Operation // the chunk's, made afresh in one buffer
			for i := range work {
				r := porcupine.Unknown
				if left := time.Until(deadline); left > 0 && ctx.Err() == nil {
					m := lockModel
					m.Partition, m.Init = nil, func() any { return chunks[i].init }
					buf = porcupineOps(buf[:0], chunks[i].ops, false)
					r = porcupine.CheckOperationsTimeout(m, buf, left)
				}
				results <- verdict{i, r}
			}
		}()
	}

	outcome := map[string]porcupine.CheckResult{} // worst so far, by key
	worse := func(k string, r porcupine.CheckResult) {
		if outcome[k] != porcupine.Illegal && r != porcupine.Ok {
			outcome[k] = r
		}
	}
	done := make([]bool, len(chunks))
wait:
	for range chunks {
		select {
		case v := <-results:
			done[v.chunk] = true
			worse(chunks[v.chunk].key, v.r)
		case <-ctx.Done():
			res.Error = fmt.Errorf("linearizable: %w", ctx.Err()).Error()
			for i, c := range chunks {
				if !done[i] {
					worse(c.key, porcupine.Unknown)
				}
			}
			break wait
		}
	}
	for _, k := range keys {
		switch outcome[k] {
		case porcupine.Illegal:
			res.BadKeys = append(res.BadKeys, k)
		case porcupine.Unknown:
			res.UnknownKeys = append(res.UnknownKeys, k)
		}
	}
	switch {
	case len(res.BadKeys) > 0:
		res.Valid = Invalid
	case len(res.UnknownKeys) > 0:
		res.Valid = Unknown
	}
	return res
}

// maxVisualized is the most lock operations of one key that
// LinearizableVisualization shows.
const maxVisualized = 2000

// LinearizableVisualization writes porcupine's interactive HTML view of the
// history's lock operations, one partition per key, to w. Operation times
// are shown in order, not to scale; hovering shows the real ones. A key with
// more than maxVisualized lock operations is shown in part: the first
// stretch (see splitKey) porcupine finds illegal, else the first stretch,
// starting with a made-up acquire by whoever held the key before it.
// It runs porcupine in verbose mode, with defaultLinearizableTimeout.
// Annotations (times in the history's nanoseconds), such as fault windows,
// are drawn along the operations.
func LinearizableVisualization(ops []history.Op, w io.Writer, annotations ...porcupine.Annotation) error {
	var all []porcupine.Operation
	byKey := lockOperations(ops)
	for _, k := range sortedKeys(byKey) {
		if len(byKey[k]) <= maxVisualized {
			all = porcupineOps(all, byKey[k], true)
			continue
		}
		chunks := splitKey(k, byKey[k], maxVisualized/2)
		show := chunks[0]
		for _, c := range chunks {
			m := lockModel
			m.Partition, m.Init = nil, func() any { return c.init }
			if porcupine.CheckOperationsTimeout(m, porcupineOps(nil, c.ops, false), defaultLinearizableTimeout) == porcupine.Illegal {
				show = c
				break
			}
		}
		if show.init != free {
			t := show.ops[0].call
			all = append(all, porcupine.Operation{
				ClientId: show.init, Call: t - 2, Return: t - 1,
				Input:    &lockInput{process: show.init, key: k},
				Metadata: "held the key before this part of the history",
			})
		}
		all = porcupineOps(all, show.ops, true)
	}
	_, info := porcupine.CheckOperationsVerbose(lockModel, all, defaultLinearizableTimeout)
	for _, p := range info.PartialLinearizations() {
		// Porcupine collects these from a map: put them in one order (longest
		// first, as it shows them), so the same history gives the same page.
		slices.SortFunc(p, func(a, b []int) int { return cmp.Or(cmp.Compare(len(b), len(a)), slices.Compare(a, b)) })
	}
	info.AddAnnotations(annotationsOnOps(all, annotations))
	if err := porcupine.Visualize(lockModel, info, w); err != nil {
		return fmt.Errorf("linearizability visualization: %w", err)
	}
	return nil
}

// opTimes is a visualized operation's real times (history nanoseconds),
// kept as its metadata: hovering shows them, and annotationsOnOps places
// annotations by them.
type opTimes struct{ call, ret int64 }

func (t opTimes) String() string {
	return fmt.Sprintf("invoked at %.6fs, returned at %.6fs", float64(t.call)/1e9, float64(t.ret)/1e9)
}

// annotationsOnOps moves annotations from history nanoseconds to the
// numbering porcupine is given (see orderTies), along the operations of the
// first key shown (keys are numbered apart, so other keys line up only
// roughly): an annotation starts at the first operation event at or after
// its start and ends at the last one at or before its end.
func annotationsOnOps(ops []porcupine.Operation, anns []porcupine.Annotation) []porcupine.Annotation {
	if len(anns) == 0 {
		return nil
	}
	type point struct{ real, at int64 }
	var pts []point
	var key string
	for _, o := range ops {
		t, ok := o.Metadata.(opTimes)
		in, isLock := o.Input.(*lockInput)
		if !ok || !isLock {
			continue
		}
		if key == "" {
			key = in.key
		}
		if in.key == key {
			pts = append(pts, point{t.call, o.Call}, point{t.ret, o.Return})
		}
	}
	if len(pts) == 0 {
		return anns
	}
	slices.SortFunc(pts, func(a, b point) int { return cmp.Or(cmp.Compare(a.real, b.real), cmp.Compare(a.at, b.at)) })
	out := make([]porcupine.Annotation, len(anns))
	for i, a := range anns {
		s, _ := slices.BinarySearchFunc(pts, a.Start, func(p point, t int64) int { return cmp.Compare(p.real, t) })
		e, _ := slices.BinarySearchFunc(pts, a.End+1, func(p point, t int64) int { return cmp.Compare(p.real, t) })
		e--
		start, end := pts[len(pts)-1].at+1, pts[0].at-1
		if s < len(pts) {
			start = pts[s].at
		}
		if e >= 0 {
			end = pts[e].at
		}
		a.Start, a.End = start, max(start, end)
		out[i] = a
	}
	return out
}
