package checker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/locktorture/locktorture/history"
)

// ErrNotStreamable is returned by Stream.Result when the history breaks a
// rule the streaming checkers rely on (a process with two ops outstanding,
// a completion that matches no invoke, time going backwards): check it
// whole with Check instead. Histories the harness records never do.
var ErrNotStreamable = errors.New("checker: the history cannot be checked as a stream")

// minSegment is the fewest ops of one key a Stream gathers before it
// checks them, at the next quiet moment of the key (a variable for tests).
// Each key holds that many ops (136 bytes each) until it is checked: with
// 2048, the 16 busy keys of a million-op history hold 5.6 MB, not 11 MB
// (which the GC's goal doubled), and the checks cost the same.
var minSegment = 2048

// Stream runs the checkers over a history fed one op at a time, in bounded
// memory: its state is per key and per client, plus, for each key, the
// ops since the key was last quiet. A key is quiet when no op on it is
// outstanding, nobody holds it and no transactional write on it awaits its
// COMMIT: nothing before such a moment can overlap, be linearized against
// or be rolled back by anything after it. So each key's history is cut
// there into segments (of at least minSegment ops), and mutex,
// linearizable (within its time limit per segment) and the holds of stats
// judge each segment as they would the whole history; fencing and lost-update carry their per-key state
// from one segment to the next; the rest of stats counts op by op, its
// latency percentiles from a histogram past the first latencyExact
// samples. The result equals Check's on every history it accepts (see
// ErrNotStreamable): the fuzz tests hold it to the batch checkers.
//
// A key that never goes quiet (a client that holds it for the whole run)
// keeps all its ops until the end: memory is then that key's history.
type Stream struct {
	ctx  context.Context
	opt  Options
	runs map[string]bool

	keys   map[string]*segment
	recent [64]*segment           // the keys last looked up (see segment)
	procs  procTable[outstanding] // each process's op in flight
	n      int64                  // ops seen
	first  int64
	last   int64
	bad    string // why the history is not streamable, once known

	mutex    *MutexResult
	mutexV   map[string][]Overlap // the first maxListed of each key, in order
	lin      *LinearizableResult
	linKeys  map[string]int // worst porcupine outcome by key: 0 ok, 1 unknown, 2 illegal
	linLimit time.Duration  // the time limit of each segment
	fence    *fencing
	lost     *lostStream
	stats    *statsStream
}

// outstanding is a process's op in flight.
type outstanding struct {
	f, key string
	busy   bool
	// acquire is the process's acquire in flight, invoked at position pos,
	// which its key's segment is given only with its ok. An acquire that
	// completes fail or info is nothing to any checker of a segment (no
	// hold, no lock op for porcupine, no read or write), and most acquires
	// of a busy key are refused: the segment keeps neither it nor its
	// invoke. One granted is given after the ops that came while it was in
	// flight, which changes no checker's answer: each process's ops keep
	// their order and every op its time, all the mutex checker looks at,
	// and the linearizable checker answers the mutex checker's question on
	// any history (orderTies).
	acquire history.Op
	pos     int64
}

// segment is one key's ops since it was last quiet, and what keeps it from
// being quiet now.
type segment struct {
	key         string
	ops         []history.Op
	pos         []int64   // each op's position in the history
	outstanding int       // ops on the key in flight
	ending      int       // acquires, releases and lost ops among them
	holders     holderSet // processes holding it
	tx          map[int]int
	want        *keyWant // stats's state of the key (nil without stats)
	anyTx       bool     // an op of the segment is transactional (see resolveTx)
	maxTime     int64
}

// NewStream returns a Stream running the named checkers (every one when
// names is empty). An unknown name is an error.
func NewStream(ctx context.Context, names []string, opt Options) (*Stream, error) {
	if len(names) == 0 {
		names = All
	}
	s := &Stream{ctx: ctx, opt: opt, runs: map[string]bool{}, keys: map[string]*segment{}}
	for _, n := range names {
		if !IsKnown(n) {
			return nil, fmt.Errorf("unknown checker %q (known: %v)", n, All)
		}
		s.runs[n] = true
	}
	if s.runs[NameMutex] {
		s.mutex = &MutexResult{Valid: Valid, Violations: []Overlap{}}
		s.mutexV = map[string][]Overlap{}
	}
	if s.runs[NameLinearizable] {
		timeout := opt.LinearizableTimeout
		if timeout <= 0 {
			timeout = defaultLinearizableTimeout
		}
		s.lin = &LinearizableResult{Valid: Valid, TimeoutMS: timeout.Milliseconds()}
		s.linKeys, s.linLimit = map[string]int{}, timeout
	}
	if s.runs[NameFencing] {
		s.fence = newFencing()
	}
	if s.runs[NameLostUpdate] {
		s.lost = newLostStream()
	}
	if s.runs[NameStats] {
		s.stats = newStatsStream()
	}
	return s, nil
}

// Add feeds the history's next op. The Stream keeps op until its key's
// segment is checked.
func (s *Stream) Add(op *history.Op) {
	pos := s.n
	s.n++
	if s.bad != "" {
		return
	}
	if pos == 0 {
		s.first, s.last = op.Time, op.Time
	}
	if op.Time < s.last {
		s.notStreamable(fmt.Sprintf("op %d: time goes backwards", pos))
		return
	}
	s.last = op.Time
	if op.IsNemesis() {
		if s.stats != nil {
			s.stats.add(op, nil)
		}
		return
	}
	seg := s.segment(op.Key)
	if s.stats != nil {
		s.stats.add(op, seg.want)
	}
	slot := s.procs.at(op.Process)
	switch {
	case op.Type == history.Invoke && slot.busy:
		s.notStreamable(fmt.Sprintf("op %d: process %d invokes while an op is outstanding", pos, op.Process))
		return
	case op.Type != history.Invoke && (!slot.busy || slot.f != op.F || slot.key != op.Key):
		s.notStreamable(fmt.Sprintf("op %d: process %d completes an op it did not invoke", pos, op.Process))
		return
	}
	if seg.quiet() && len(seg.ops) >= minSegment && op.Time > seg.maxTime {
		s.check(op.Key, seg, false)
	}
	seg.maxTime = op.Time
	ending := 0
	if op.F == history.Acquire || letsGo(op.F) {
		ending = 1
	}
	if op.Type == history.Invoke {
		slot.f, slot.key, slot.busy = op.F, op.Key, true
		seg.outstanding++
		seg.ending += ending
	} else {
		slot.f, slot.key, slot.busy = "", "", false
		seg.outstanding--
		seg.ending -= ending
	}
	switch {
	case op.F != history.Acquire:
		seg.push(op, pos)
	case op.Type == history.Invoke:
		// Kept aside until it completes (see outstanding.acquire).
		slot.acquire, slot.pos = *op, pos
	case op.Type == history.OK:
		seg.push(&slot.acquire, slot.pos)
		seg.push(op, pos)
		slot.acquire = history.Op{}
	default:
		slot.acquire = history.Op{}
	}
	seg.track(op)
}

// push appends op, the history's op at position pos, to the segment.
func (g *segment) push(op *history.Op, pos int64) {
	if len(g.ops) == cap(g.ops) {
		g.grow()
	}
	g.ops = append(g.ops, *op)
	g.pos = append(g.pos, pos)
	g.anyTx = g.anyTx || op.Tx
}

// grow makes room for more ops in the segment: twice as many, and at
// once as many as a segment is checked at (minSegment, and a quarter more
// for the wait for a quiet moment) when that is near. append grows a
// large slice a quarter at a time, and a key's first segment would be
// copied a dozen times on its way to minSegment ops.
func (g *segment) grow() {
	n := max(32, 2*cap(g.ops))
	if n >= minSegment/2 && n < minSegment+minSegment/4 {
		n = minSegment + minSegment/4
	}
	g.ops = append(make([]history.Op, 0, n), g.ops...)
	g.pos = append(make([]int64, 0, n), g.pos...)
}

// segment returns key's segment, new when it has none. The last ones
// looked up are kept by a hash of the key's last bytes (see recentSlot), so
// that a few busy keys whose ops interleave are not looked up in the map
// at every op.
func (s *Stream) segment(key string) *segment {
	slot := &s.recent[recentSlot(key)]
	if g := *slot; g != nil && g.key == key {
		return g
	}
	g := s.keys[key]
	if g == nil {
		g = &segment{key: key}
		if s.stats != nil {
			g.want = s.stats.key(key)
		}
		s.keys[key] = g
	}
	*slot = g
	return g
}

// recentSlot is key's place in Stream.recent.
func recentSlot(key string) int {
	h := uint(len(key))
	if n := len(key); n > 0 {
		h = h*31 + uint(key[n-1])
		if n > 1 {
			h = h*31 + uint(key[n-2])
		}
	}
	return int(h % uint(len(Stream{}.recent)))
}

// notStreamable gives up on the stream, freeing what it holds.
func (s *Stream) notStreamable(why string) {
	s.bad = why
	s.keys, s.procs, s.recent = nil, procTable[outstanding]{}, [64]*segment{}
}

// quiet reports whether nothing in the segment can reach past this moment
// that a checker of a segment would see across it: nobody holds the key,
// no transactional write awaits its COMMIT, and the only ops in flight
// are acquires, releases and lost ops. Those may be cut in two:
//   - An acquire's hold, if it is granted, begins at its ok, after the cut.
//     The segment after it gets the acquire, invoke and ok (see
//     outstanding.acquire); one refused is in no segment.
//   - A release's (or lost op's) hold ended at its invoke, before the cut.
//     The segment before it sees the invoke, with an outcome unknown at its
//     end (the linearizable checker's rule for a release still in flight
//     when a history ends); the one after sees a completion with no invoke,
//     which is nothing to any checker.
//
// No hold reaches across such a moment, and the linearizable checker
// answers the mutex checker's question on any history (orderTies), so each
// side is judged as in the whole history; neither kind of op is a read or
// a write, which fencing and lost-update follow across segments. Waiting
// for no op at all in flight would seldom cut a key that clients keep
// asking for: one of them nearly always has an acquire in flight, and the
// last holder's release is in flight while the next is granted.
func (g *segment) quiet() bool {
	return g.outstanding == g.ending && g.holders.len() == 0 && len(g.tx) == 0
}

// track follows the holds and the transactional writes awaiting COMMIT,
// by the rules of Holds and resolveTx.
func (g *segment) track(op *history.Op) {
	switch holdEvent(op) {
	case holdStarts:
		g.holders.add(op.Process)
	case holdEnds:
		g.holders.remove(op.Process)
	}
	if op.Type == history.Invoke {
		return
	}
	switch {
	case (op.F == history.Write || op.F == history.Acquire) && op.Tx && op.Type == history.OK:
		if g.tx == nil {
			g.tx = map[int]int{}
		}
		g.tx[op.Process]++
	case op.F == history.Release:
		delete(g.tx, op.Process)
	}
}

// check judges one key's segment and starts the next. A last segment (at
// the end of the history) ends with a marker at the history's last time,
// so that holds still open end there, as in the batch checkers.
func (s *Stream) check(key string, seg *segment, last bool) {
	ops := seg.ops
	if last {
		ops = append(ops, history.Op{Process: history.NemesisProcess, Type: history.Info, F: "end", Time: s.last})
	}
	resolved := ops // judged by resolveTx, once for every checker
	if seg.anyTx {
		resolved = resolveTx(ops)
	}
	var holds []Hold
	if s.mutex != nil || s.stats != nil {
		holds = holdsOf(resolved)
	}
	if s.mutex != nil {
		m := mutexOf(ops, resolved, func() []Hold { return holds })
		s.mutex.Holds += m.Holds
		s.mutex.RolledBack += m.RolledBack
		s.mutex.Count += m.Count
		s.mutex.StaleHolders += m.StaleHolders
		s.mutex.DoubleGrants += m.DoubleGrants
		if l := s.mutexV[key]; len(l) < maxListed {
			s.mutexV[key] = append(l, m.Violations[:min(len(m.Violations), maxListed-len(l))]...)
		}
	}
	if s.stats != nil {
		s.stats.holds(key, holds)
	}
	if s.lin != nil {
		s.linearizable(key, ops, resolved)
	}
	if s.fence != nil || s.lost != nil {
		for i := range seg.ops {
			if s.fence != nil {
				s.fence.step(&resolved[i], seg.pos[i])
			}
			if s.lost != nil {
				s.lost.step(&resolved[i])
			}
		}
	}
	clear(seg.ops) // let the ops' values go
	seg.ops, seg.pos, seg.anyTx = seg.ops[:0], seg.pos[:0], false
}

// linearizable checks one segment of a key (ops, and as resolveTx judged
// them) within the time limit: the limit bounds each segment, so that a
// long run is not unknown for its length alone.
func (s *Stream) linearizable(key string, ops, resolved []history.Op) {
	worst := s.linKeys[key]
	undecided := func(limit string) {
		if len(s.lin.Undecided) < maxListed {
			s.lin.Undecided = append(s.lin.Undecided, Undecided{Key: key, From: ops[0].Time, To: ops[len(ops)-1].Time, Ops: len(ops), Limit: limit})
		}
	}
	if err := s.ctx.Err(); err != nil {
		if hasLockOp(ops) {
			s.linKeys[key] = max(worst, 1)
			undecided("the check was stopped: " + err.Error())
		}
		if s.lin.Error == "" {
			s.lin.Error = fmt.Errorf("linearizable: %w", err).Error()
		}
		return
	}
	limit := s.linLimit
	r := linearizableOf(s.ctx, resolved, limit)
	s.lin.Ops += r.Ops
	if r.Keys == 0 {
		return
	}
	switch {
	case len(r.BadKeys) > 0:
		worst = 2
	case len(r.UnknownKeys) > 0:
		worst = max(worst, 1)
		undecided(fmt.Sprintf("porcupine ran out of the %s time limit on it", limit))
	}
	s.linKeys[key] = worst
	if r.Error != "" && s.lin.Error == "" {
		s.lin.Error = r.Error
	}
}

// hasLockOp reports whether ops hold an op porcupine would be given.
func hasLockOp(ops []history.Op) bool {
	for i := range ops {
		op := &ops[i]
		if !op.IsNemesis() && isLockOp(op) {
			return true
		}
	}
	return false
}

// Result checks what is left of every key and returns the checkers'
// results. rescan, when lost-update found a value written twice, feeds
// the history again from its start (to Add of another Stream) so the
// duplicates' writers can be listed; with a nil rescan they are counted
// but not listed. A history the stream could not take is ErrNotStreamable.
func (s *Stream) Result(rescan func(add func(*history.Op)) error) (Checkers, error) {
	if s.bad != "" {
		return Checkers{}, fmt.Errorf("%w: %s", ErrNotStreamable, s.bad)
	}
	for _, k := range sortedKeys(s.keys) {
		s.check(k, s.keys[k], true)
	}
	var c Checkers
	if s.mutex != nil {
		c.Mutex = s.mutexResult()
	}
	if s.lin != nil {
		c.Linearizable = s.linResult()
	}
	if s.fence != nil {
		c.Fencing = s.fence.finish()
	}
	if s.lost != nil {
		var collected *lostStream
		if want := s.lost.duplicated(); want != nil && rescan != nil {
			again, _ := NewStream(s.ctx, []string{NameLostUpdate}, s.opt)
			again.lost.want = want
			if err := rescan(again.Add); err != nil {
				return Checkers{}, fmt.Errorf("lost-update: reading the history again: %w", err)
			}
			if again.bad != "" {
				return Checkers{}, fmt.Errorf("lost-update: the history changed while it was read again: %s", again.bad)
			}
			for _, k := range sortedKeys(again.keys) {
				again.check(k, again.keys[k], true)
			}
			collected = again.lost
		}
		c.LostUpdate = s.lost.finish(collected)
	}
	if s.stats != nil {
		c.Stats = s.stats.result(s.first, s.last, s.n)
	}
	return c, nil
}

// mutexResult merges the keys' violations: the earliest first, as Mutex
// lists them (by the later hold's start; at one instant, by key).
func (s *Stream) mutexResult() *MutexResult {
	res := s.mutex
	for _, k := range sortedKeys(s.mutexV) {
		res.Violations = append(res.Violations, s.mutexV[k]...)
	}
	slices.SortStableFunc(res.Violations, func(a, b Overlap) int {
		switch {
		case a.Later.Start < b.Later.Start:
			return -1
		case a.Later.Start > b.Later.Start:
			return 1
		}
		return 0
	})
	res.Violations = res.Violations[:min(len(res.Violations), maxListed)]
	if res.Count > 0 {
		res.Valid = Invalid
	}
	return res
}

// linResult turns each key's worst outcome into the result.
func (s *Stream) linResult() *LinearizableResult {
	res := s.lin
	keys := sortedKeys(s.linKeys)
	res.Keys = len(keys)
	for _, k := range keys {
		switch s.linKeys[k] {
		case 2:
			res.BadKeys = append(res.BadKeys, k)
		case 1:
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
