package history

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// errContract is wrapped by every error about an op that breaks the
// history contract (docs/history.md) so badly that it cannot be checked.
var errContract = errors.New("breaks the history contract")

// Validate checks the structural rules of a history: indexes from 0 without
// gaps, time never going backwards, at most one outstanding op per client
// process, and every completion matching its process's open invocation.
// ctx is checked periodically so huge histories can be abandoned.
func Validate(ctx context.Context, ops []Op) error {
	open := map[int]string{}
	var lastT int64
	for i := range ops {
		if i%65536 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		op := &ops[i]
		if op.Index != int64(i) {
			return fmt.Errorf("history: op %d has index %d", i, op.Index)
		}
		if op.Time < lastT {
			return fmt.Errorf("history: op %d: time goes backwards (%d < %d)", i, op.Time, lastT)
		}
		lastT = op.Time
		if op.IsNemesis() {
			continue
		}
		switch op.Type {
		case Invoke:
			if f, ok := open[op.Process]; ok {
				return fmt.Errorf("history: op %d: process %d invokes %s while %s is outstanding", i, op.Process, op.F, f)
			}
			open[op.Process] = op.F
		case OK, Fail, Info:
			f, ok := open[op.Process]
			if !ok {
				return fmt.Errorf("history: op %d: process %d completes %s with nothing outstanding", i, op.Process, op.F)
			}
			if f != op.F {
				return fmt.Errorf("history: op %d: process %d completes %s but invoked %s", i, op.Process, op.F, f)
			}
			delete(open, op.Process)
		default:
			return fmt.Errorf("history: op %d: unknown type %q", i, op.Type)
		}
	}
	return nil
}

// isClientF reports whether f is a client operation of the contract (each
// on a key).
func isClientF(f string) bool {
	switch f {
	case Acquire, Release, Extend, Read, Write, FinalRead, Lost:
		return true
	}
	return false
}

// valued reports whether f is a client operation whose value, when
// given, is an integer.
func valued(f string) bool {
	switch f {
	case Read, Write, FinalRead:
		return true
	}
	return false
}

// pending is a client's outstanding invocation: its position and f.
type pending struct {
	i int
	f string
	p int // the process
}

// pendingSet holds each process's outstanding invocation: a slice for the
// usual small process numbers, a map for the rest.
type pendingSet struct {
	small []pending // by process; i == 0 with f == "" is none
	other map[int]pending
}

func (s *pendingSet) get(p int) (pending, bool) {
	if p >= 0 && p < 1<<16 {
		if p < len(s.small) && s.small[p].f != "" {
			return s.small[p], true
		}
		return pending{}, false
	}
	v, ok := s.other[p]
	return v, ok
}

func (s *pendingSet) put(p int, v pending) {
	if p >= 0 && p < 1<<16 {
		if p >= len(s.small) {
			s.small = append(s.small, make([]pending, p+1-len(s.small))...)
		}
		s.small[p] = v
		return
	}
	if s.other == nil {
		s.other = map[int]pending{}
	}
	s.other[p] = v
}

func (s *pendingSet) del(p int) {
	if p >= 0 && p < 1<<16 {
		if p < len(s.small) {
			s.small[p] = pending{}
		}
		return
	}
	delete(s.other, p)
}

// first returns how many invocations are outstanding and the earliest.
func (s *pendingSet) first() (n int, first pending) {
	first.i = -1
	consider := func(v pending) {
		n++
		if first.i < 0 || v.i < first.i {
			first = v
		}
	}
	for _, v := range s.small {
		if v.f != "" {
			consider(v)
		}
	}
	for _, v := range s.other {
		consider(v)
	}
	return n, first
}

// conform checks the rules of the contract that no checker can work around,
// op by op (the Reader applies them, with the required fields, to every
// line it reads): the type is one of invoke, ok, fail and info; the time is
// not below zero; a client's lock or resource op names its key; a read's,
// write's or final read's value, when given, is an integer. A history that
// breaks one is refused: checking it would file ops under the wrong key,
// drop them in silence, or place them before the run began. (The Reader
// also refuses time going backwards, which takes the op before.)
func conform(op *Op) error {
	switch op.Type {
	case Invoke, OK, Fail, Info:
	case "":
		return fmt.Errorf("%w: no \"type\" (want invoke, ok, fail or info)", errContract)
	default:
		return fmt.Errorf("%w: type %q is not invoke, ok, fail or info", errContract, op.Type)
	}
	if op.F == "" {
		return fmt.Errorf("%w: no \"f\" (what the op does)", errContract)
	}
	if op.Time < 0 {
		return fmt.Errorf("%w: time %d is below zero (nanoseconds since the run started)", errContract, op.Time)
	}
	if op.IsNemesis() || !isClientF(op.F) {
		return nil
	}
	if op.Key == "" {
		return fmt.Errorf("%w: client %s with no \"key\"", errContract, op.F)
	}
	if valued(op.F) && len(op.Value) > 0 && string(op.Value) != "null" {
		if _, ok := op.Int(); !ok {
			return fmt.Errorf("%w: %s value %s is not an integer", errContract, op.F, op.Value)
		}
	}
	return nil
}

// Problem is one way a history breaks a rule of the contract that the
// checkers can still work around (they judge the history as it is, and the
// results say what was wrong with it).
type Problem struct {
	// Op is the op's position in the history, from 0.
	Op int
	// Text says what is wrong, in plain words.
	Text string
}

// String names the op and the problem.
func (p Problem) String() string { return fmt.Sprintf("op %d: %s", p.Op, p.Text) }

// Lint returns every rule of the contract that ops break and conform does
// not refuse, in history order: an index that is not the op's position, time
// going backwards or below zero, a process below -1, a nemesis op that is
// not info, a client invoking while its previous op is outstanding, a
// completion with nothing outstanding or of another op, a client f outside
// the contract, ops still outstanding when the history ends, and a fault
// started (start-X) and never stopped (stop-X).
func Lint(ops []Op) []Problem {
	var l Linter
	for i := range ops {
		l.Add(&ops[i])
	}
	return l.Problems()
}

// Linter is Lint fed one op at a time, in bounded memory when Max is set:
// it keeps the first Max problems (every one when Max is zero) and counts
// them all.
type Linter struct {
	// Max caps the problems kept; zero keeps every one.
	Max int

	ps       []Problem
	count    int
	i        int
	open     pendingSet
	faults   map[string][]int // started and not yet stopped, by fault name
	lastT    int64
	badIndex bool
}

// Count is how many problems the history has so far (with the end's, once
// Problems was called).
func (l *Linter) Count() int { return l.count }

func (l *Linter) add(i int, format string, args ...any) {
	l.count++
	if l.Max == 0 || len(l.ps) < l.Max {
		l.ps = append(l.ps, Problem{Op: i, Text: fmt.Sprintf(format, args...)})
	}
}

// Add checks the history's next op.
func (l *Linter) Add(op *Op) {
	i := l.i
	l.i++
	if l.faults == nil {
		l.faults = map[string][]int{}
	}
	if op.Index != int64(i) && !l.badIndex {
		l.add(i, "index is %d, not its position %d (indexes count from 0 without gaps)", op.Index, i)
		l.badIndex = true // once: after a gap every index is off
	}
	switch {
	case op.Time < 0:
		l.add(i, "time %d is below zero", op.Time)
	case op.Time < l.lastT:
		l.add(i, "time goes backwards (%d after %d)", op.Time, l.lastT)
	}
	l.lastT = max(l.lastT, op.Time)
	if op.Process < NemesisProcess {
		l.add(i, "process %d is neither a client (0 and up) nor the nemesis (-1); checked as a client", op.Process)
	}
	if op.IsNemesis() {
		if op.Type != Info {
			l.add(i, "nemesis op %s has type %s (nemesis ops are info)", op.F, op.Type)
		}
		if name, ok := strings.CutPrefix(op.F, "start-"); ok {
			l.faults[name] = append(l.faults[name], i)
		} else if name, ok := strings.CutPrefix(op.F, "stop-"); ok && len(l.faults[name]) > 0 {
			l.faults[name] = l.faults[name][1:]
		}
		return
	}
	if !isClientF(op.F) {
		l.add(i, "process %d: %q is not a client op (acquire, release, extend, read, write, final-read, lost)", op.Process, op.F)
	}
	switch op.Type {
	case Invoke:
		if p, ok := l.open.get(op.Process); ok {
			l.add(i, "process %d invokes %s while its %s (op %d) is outstanding: that op never completed", op.Process, op.F, p.f, p.i)
		}
		l.open.put(op.Process, pending{i, op.F, op.Process})
	case OK, Fail, Info:
		p, ok := l.open.get(op.Process)
		switch {
		case !ok:
			l.add(i, "process %d completes %s with nothing outstanding", op.Process, op.F)
		case p.f != op.F:
			l.add(i, "process %d completes %s but invoked %s (op %d)", op.Process, op.F, p.f, p.i)
		}
		l.open.del(op.Process)
	}
}

// Problems adds the end's problems (faults never healed, ops never
// completed) and returns the problems kept, in order.
func (l *Linter) Problems() []Problem {
	for _, name := range slices.Sorted(maps.Keys(l.faults)) {
		if is := l.faults[name]; len(is) > 0 {
			l.add(is[0], "start-%s was never followed by stop-%s: the fault was never healed (the history ends first)", name, name)
		}
	}
	l.faults = nil
	if n, first := l.open.first(); n > 0 {
		l.add(first.i, "%d op(s) never completed before the history ended (the first: process %d's %s)", n, first.p, first.f)
	}
	l.open = pendingSet{}
	return l.ps
}
