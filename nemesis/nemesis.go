// Package nemesis injects faults into a run and records them in the
// history: each fault kind is one file that registers itself and declares
// its own params (the keys a scenario step gives it, decoded strictly by
// DecodeParams; params.go holds the shared parts); a Schedule says
// when faults happen, either scripted (at a time, or on a client's event)
// or at random from a seed. Every fault with a duration is recorded as a
// start-<fault>/stop-<fault> pair of nemesis ops, and all are healed by Heal.
package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/internal/registry"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/history"
)

// Sentinel errors of this package.
var (
	// ErrUnknown is wrapped for a fault name that is not registered.
	ErrUnknown = errors.New("unknown nemesis")
	// ErrTarget is wrapped when a step's params do not fit the run (a
	// target that does not exist, a missing or bad value).
	ErrTarget = errors.New("bad nemesis target")
)

// Env is what faults act on.
type Env struct {
	// Gates freeze simulated client processes, one per client.
	Gates []*clientfault.Gate
	// Clocks are the clients' own clocks, one per client.
	Clocks []*clientfault.Clock
	// Cluster holds the servers.
	Cluster *cluster.Cluster
}

// OpNamer is a fault whose history ops are not start-<name>/stop-<name>:
// an instant fault (kill, failover, terminate) names its op, and its stop
// op, if any (kill's "restart"); an empty stop name records nothing.
type OpNamer interface {
	OpNames(fault string) (start, stop string)
}

// linkUser is a fault that acts on links: the run routes client traffic
// through proxies when a schedule holds one.
type linkUser interface {
	UsesLinks() bool
}

// ZeroDuration is a fault that may last no time at all (a kill restarted
// at once).
type ZeroDuration interface {
	AllowsZeroDuration() bool
}

// RandomEventer is a fault that a random mix fires on an event rather than
// at a bare instant: the target process's next successful op with the f
// RandomEvent names, at or after the planned time. A pause planned this way
// strikes inside a critical section, where a stop-the-world pause matters,
// instead of in think time, where it changes nothing.
type RandomEventer interface {
	RandomEvent() string
}

// applier is a fault that does not apply to every run: Applies says why
// not, from the run's shape (the run is refused rather than the fault
// silently skipped).
type applier interface {
	Applies(shape Shape) error
}

// idler is a fault that may find nothing to act on when it strikes (a
// session kill that finds no session): Idle says why, from the value its
// Start returned, or "" when it acted. A scripted step that did nothing
// leaves the run untested (see Engine.Idle).
type idler interface {
	Idle(val map[string]any) string
}

// effecter is a fault that takes effect some time after it strikes (a
// failover: when a Sentinel names the new primary). Effect reads, from
// the value its healer returned, how long after the strike that was, and
// false when it never came.
type effecter interface {
	Effect(stopVal map[string]any) (after time.Duration, took bool)
}

// Healer ends one injected fault and returns the value to record with its
// stop op.
type Healer func(ctx context.Context) (map[string]any, error)

// Fault is one kind of fault. It owns its parameters: Params, Start and
// RandomParams all deal in one params type, declared in the fault's file.
type Fault interface {
	// Params returns fresh params, with their defaults, for a step to
	// decode its keys into (see DecodeParams).
	Params() Params
	// Start injects the fault with p (of the type Params returns) for d
	// (d is recorded; the engine calls the returned Healer when d is over
	// or at Heal). It returns the value recorded with the start op.
	Start(ctx context.Context, env *Env, p Params, d time.Duration) (map[string]any, Healer, error)
	// RandomParams picks params for a random schedule.
	RandomParams(rng *rand.Rand, env *Env) Params
}

// Info describes a fault for `locktorture list nemeses`.
type Info struct {
	Name        string
	Description string
	// AppliesTo says which backends it applies to.
	AppliesTo string
}

// entry is one registered fault.
type entry struct {
	info  Info
	fault Fault
}

var registered = registry.New[entry](ErrUnknown)

// register adds a fault kind; it panics on a duplicate (a programming error).
func register(info Info, f Fault) { registered.Add(info.Name, entry{info, f}) }

// Lookup returns the fault registered under name.
func Lookup(name string) (Fault, error) {
	e, err := registered.Get(name)
	return e.fault, err
}

// List describes every registered fault, sorted by name.
func List() []Info {
	var out []Info
	for _, e := range registered.All() {
		out = append(out, e.info)
	}
	return out
}

// Step is one scripted fault.
type Step struct {
	// Fault names the fault kind.
	Fault string
	// Params are the fault's own (nil: the fault's defaults).
	Params Params
	// At is the offset from the run's start; used when On is empty.
	At time.Duration
	// On triggers the step on an event instead: the target process's (the
	// params' `process:`) or, with none, any client's next successful op
	// with this f (one of events), at or after At.
	On string
	// Duration is how long the fault lasts.
	Duration time.Duration
}

// String describes the step as run.log shows the plan: "pause process 0
// on read for 2.5s", "kill servers [C] at 1.2s for 0s".
func (s Step) String() string {
	when := "at " + s.At.String()
	if s.On != "" {
		when = "on " + s.On
		if s.At > 0 {
			when += " after " + s.At.String()
		}
	}
	target := "(no target)"
	if s.Params != nil && s.Params.String() != "" {
		target = s.Params.String()
	}
	return fmt.Sprintf("%s %s %s for %s", s.Fault, target, when, s.Duration)
}

// Random is a seeded random mix of faults.
type Random struct {
	// Faults to choose from.
	Faults []string
	// Interval is the mean time between fault starts.
	Interval time.Duration
	// Min and Max bound each fault's duration.
	Min, Max time.Duration
}

// Schedule is the whole nemesis plan of a run.
type Schedule struct {
	Script []Step
	Random *Random
}

// Empty reports whether the schedule injects nothing.
func (s Schedule) Empty() bool {
	return len(s.Script) == 0 && (s.Random == nil || len(s.Random.Faults) == 0)
}

// UsesLinks reports whether any step's fault acts on links.
func UsesLinks(steps []Step, r *Random) bool {
	names := []string{}
	for _, s := range steps {
		names = append(names, s.Fault)
	}
	if r != nil {
		names = append(names, r.Faults...)
	}
	for _, n := range names {
		if f, err := Lookup(n); err == nil {
			if l, ok := f.(linkUser); ok && l.UsesLinks() {
				return true
			}
		}
	}
	return false
}

// Plan turns a random mix into concrete steps for a run of the given
// length: the same seed always gives the same faults, targets and offsets.
func Plan(r Random, seed int64, length time.Duration, env *Env) ([]Step, error) {
	if len(r.Faults) == 0 || r.Interval <= 0 {
		return nil, nil
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6e656d65))
	var steps []Step
	at := r.Interval / 2
	for at < length {
		name := r.Faults[rng.IntN(len(r.Faults))]
		f, err := Lookup(name)
		if err != nil {
			return nil, err
		}
		d := r.Min
		if r.Max > r.Min {
			d += time.Duration(rng.Int64N(int64(r.Max - r.Min)))
		}
		st := Step{Fault: name, Params: f.RandomParams(rng, env), At: at, Duration: d}
		if e, ok := f.(RandomEventer); ok {
			st.On = e.RandomEvent()
		}
		steps = append(steps, st)
		// The next start comes after this fault ends, plus a jittered gap.
		gap := r.Interval/2 + time.Duration(rng.Int64N(int64(r.Interval)))
		at += d + gap
	}
	return steps, nil
}

// events are the ops a step may wait for with On.
var events = []string{history.Acquire, history.Read, history.Write, history.Release}

// Check checks one scripted step against the run's shape: its fault
// exists and applies to the run, its event is one of events, it lasts
// (unless the fault may be instant), and its params fit. An error about
// one key is a *stepKeyError.
func (s Step) Check(shape Shape) error {
	f, err := Lookup(s.Fault)
	if err != nil {
		return &stepKeyError{Key: "fault", Err: err}
	}
	p, err := paramsOf(f, s)
	if err != nil {
		return err
	}
	if s.On != "" && !slices.Contains(events, s.On) {
		return keyErr("on", "on: %q is not an event (%s)", s.On, strings.Join(events, ", "))
	}
	if s.At < 0 || s.Duration < 0 {
		return keyErr("", "at (%s) and for (%s) must be 0 or more", s.At, s.Duration)
	}
	if z, ok := f.(ZeroDuration); s.Duration == 0 && !(ok && z.AllowsZeroDuration()) {
		return keyErr("", "%s needs a duration (`for:`, how long it lasts)", s.Fault)
	}
	if err := Applies(s.Fault, shape); err != nil {
		return err
	}
	if err := p.Validate(shape); err != nil {
		return fmt.Errorf("%s: %w", s.Fault, err)
	}
	return nil
}

// Applies says why the named fault cannot act on a run of this shape, or
// nil when it can.
func Applies(name string, shape Shape) error {
	f, err := Lookup(name)
	if err != nil {
		return err
	}
	if a, ok := f.(applier); ok {
		return a.Applies(shape)
	}
	return nil
}

// paramsOf returns the step's params, or the fault's defaults when it has
// none; params of another fault's type are an error.
func paramsOf(f Fault, s Step) (Params, error) {
	fresh := f.Params()
	if s.Params == nil {
		return fresh, nil
	}
	if reflect.TypeOf(s.Params) != reflect.TypeOf(fresh) {
		return nil, keyErr("", "%s takes params of type %T, not %T", s.Fault, fresh, s.Params)
	}
	return s.Params, nil
}

// eventProcess is the client whose event fires a step, or -1 for any.
func eventProcess(p Params) int {
	if e, ok := p.(interface{ EventProcess() int }); ok {
		return e.EventProcess()
	}
	return -1
}

// Validate checks every step of s, and the random mix, against the run's
// shape.
func (s Schedule) Validate(shape Shape) error {
	for i, st := range s.Script {
		if err := st.Check(shape); err != nil {
			return fmt.Errorf("nemesis step %d: %w", i+1, err)
		}
	}
	if s.Random != nil {
		for _, n := range s.Random.Faults {
			if err := Applies(n, shape); err != nil {
				return err
			}
		}
		if len(s.Random.Faults) > 0 && s.Random.Interval <= 0 {
			return errors.New("nemesis: a random mix needs an interval")
		}
		if s.Random.Max < s.Random.Min {
			return errors.New("nemesis: random max is below min")
		}
	}
	return nil
}

// Engine runs a schedule against a run.
type Engine struct {
	env   *Env
	rec   *history.Recorder
	steps []Step

	mu      sync.Mutex
	pending []int // indexes of steps waiting for their event
	// waiting is len(pending), read without mu: Observe, told of every
	// op of every client, returns at once when no step waits (most
	// runs, once their steps fired) instead of taking mu for each.
	waiting  atomic.Int64
	active   map[int]*activeFault
	healed   bool
	errs     []error
	baseCtx  context.Context
	healLock sync.Mutex
	firing   sync.WaitGroup
	fired    map[int]bool
	happened map[int]bool    // steps whose fault started (see Missed)
	idle     map[int]string  // steps whose fault did nothing, and why (see Idle)
	windows  map[int]*Window // when each step's fault acted (see Windows)
	healTook time.Duration   // how long the heals done so far took (see HealTime)
	healFrom time.Time       // when the heal under way began (zero: none)
}

// Window is when one step's fault acted: from its start op's time to its
// stop op's (Stop is Start for an instant fault, and until it is healed),
// in the history's time.
type Window struct {
	Step        Step
	Start, Stop int64
	// Effect is when the fault took effect, on the same clock: Start, but
	// for a fault that acts some time after it strikes (a failover: once
	// a Sentinel names the new primary). Never says it never did.
	Effect int64
	Never  bool
}

type activeFault struct {
	step   int
	name   string
	fault  Fault
	stopOp string
	heal   Healer
	timer  *time.Timer
}

// NewEngine prepares steps (scripted, plus a random mix already planned).
func NewEngine(ctx context.Context, env *Env, rec *history.Recorder, steps []Step) *Engine {
	e := &Engine{env: env, rec: rec, steps: steps, active: map[int]*activeFault{}, baseCtx: ctx}
	for i, s := range steps {
		if s.On != "" {
			e.pending = append(e.pending, i)
		}
	}
	e.waiting.Store(int64(len(e.pending)))
	return e
}

// Steps returns the engine's steps, for the record.
func (e *Engine) Steps() []Step { return append([]Step(nil), e.steps...) }

// Run fires timed steps at their offsets (measured on the recorder's
// clock) until every one has fired, stop is closed, or ctx ends.
func (e *Engine) Run(ctx context.Context, stop <-chan struct{}) {
	timed := make([]int, 0, len(e.steps))
	for i, s := range e.steps {
		if s.On == "" {
			timed = append(timed, i)
		}
	}
	sort.SliceStable(timed, func(a, b int) bool { return e.steps[timed[a]].At < e.steps[timed[b]].At })
	for _, i := range timed {
		if e.wasFired(i) {
			continue
		}
		wait := time.Duration(int64(e.steps[i].At) - e.rec.Now())
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-stop:
				t.Stop()
				return
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
		e.fire(i)
	}
}

// FireDue fires, now and in order, the timed steps due at the run's start
// (At 0), so that a partition "from the start" is in place before any
// client sends a byte. Run skips them afterwards.
func (e *Engine) FireDue() {
	for i, s := range e.steps {
		if s.On == "" && s.At <= 0 && !e.wasFired(i) {
			e.markFired(i)
			e.fire(i)
		}
	}
}

func (e *Engine) wasFired(i int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fired[i]
}

func (e *Engine) markFired(i int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fired == nil {
		e.fired = map[int]bool{}
	}
	e.fired[i] = true
}

// Observe is the workload's observer: it fires event-triggered steps on the
// client's own goroutine, before that client's next step.
func (e *Engine) Observe(op history.Op) {
	if op.Type != history.OK || op.IsNemesis() || e.waiting.Load() == 0 {
		return
	}
	e.mu.Lock()
	var fire []int
	rest := e.pending[:0]
	for _, i := range e.pending {
		s := e.steps[i]
		if p := eventProcess(s.Params); s.On == op.F && (p < 0 || p == op.Process) && op.Time >= int64(s.At) && !e.healed {
			fire = append(fire, i)
		} else {
			rest = append(rest, i)
		}
	}
	e.pending = rest
	e.waiting.Store(int64(len(rest)))
	e.mu.Unlock()
	for _, i := range fire {
		e.fire(i)
	}
}

// fire starts step i and schedules its healing.
func (e *Engine) fire(i int) {
	s := e.steps[i]
	e.mu.Lock()
	if e.healed {
		e.mu.Unlock()
		return
	}
	// Heal waits for steps in flight, so no fault starts after it.
	e.firing.Add(1)
	e.mu.Unlock()
	defer e.firing.Done()
	f, err := Lookup(s.Fault)
	if err != nil {
		e.fail(err)
		return
	}
	p, err := paramsOf(f, s)
	if err != nil {
		e.fail(err)
		return
	}
	val, heal, err := f.Start(e.baseCtx, e.env, p, s.Duration)
	if err != nil {
		e.fail(fmt.Errorf("nemesis: start %s: %w", s.Fault, err))
		return
	}
	if heal == nil { // nothing was done (e.g. the target was already paused)
		return
	}
	startName, stopName := "start-"+s.Fault, "stop-"+s.Fault
	if n, ok := f.(OpNamer); ok {
		startName, stopName = n.OpNames(s.Fault)
	}
	at := e.record(startName, val)
	a := &activeFault{step: i, name: s.Fault, fault: f, stopOp: stopName, heal: heal}
	e.mu.Lock()
	if e.windows == nil {
		e.windows = map[int]*Window{}
	}
	e.windows[i] = &Window{Step: s, Start: at, Stop: at, Effect: at}
	if e.happened == nil {
		e.happened = map[int]bool{}
	}
	e.happened[i] = true
	if d, ok := f.(idler); ok {
		if why := d.Idle(val); why != "" {
			if e.idle == nil {
				e.idle = map[int]string{}
			}
			e.idle[i] = why
		}
	}
	e.active[i] = a
	a.timer = time.AfterFunc(s.Duration, func() { e.stopFault(i) })
	e.mu.Unlock()
}

func (e *Engine) stopFault(i int) {
	e.healLock.Lock()
	defer e.healLock.Unlock()
	e.mu.Lock()
	a, ok := e.active[i]
	delete(e.active, i)
	e.mu.Unlock()
	if !ok {
		return
	}
	e.mu.Lock()
	e.healFrom = time.Now()
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.healTook += time.Since(e.healFrom)
		e.healFrom = time.Time{}
		e.mu.Unlock()
	}()
	val, err := a.heal(context.WithoutCancel(e.baseCtx))
	if err != nil {
		e.fail(fmt.Errorf("nemesis: heal %s: %w", a.name, err))
	}
	if ef, ok := a.fault.(effecter); ok {
		after, took := ef.Effect(val)
		e.mu.Lock()
		if w := e.windows[a.step]; w != nil {
			w.Effect, w.Never = w.Start+int64(max(after, 0)), !took
		}
		e.mu.Unlock()
	}
	if a.stopOp != "" {
		at := e.record(a.stopOp, val)
		e.mu.Lock()
		if w := e.windows[a.step]; w != nil && at > w.Stop {
			w.Stop = at
		}
		e.mu.Unlock()
	}
}

// record records a nemesis op and returns its time (the time it would
// have had when it could not be recorded).
func (e *Engine) record(f string, val map[string]any) int64 {
	op := history.Op{Process: history.NemesisProcess, Type: history.Info, F: f}
	if val != nil {
		op.Value = history.ObjectValue(val)
	}
	done, err := e.rec.Record(op)
	if err != nil {
		if !errors.Is(err, history.ErrClosed) {
			e.fail(err)
		}
		return e.rec.Now()
	}
	return done.Time
}

func (e *Engine) fail(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.errs = append(e.errs, err)
}

// Heal stops every active fault now, recording each stop, and disarms the
// remaining steps. It returns the errors any fault reported during the run.
func (e *Engine) Heal(ctx context.Context) error {
	e.mu.Lock()
	e.healed = true
	e.pending = nil
	e.waiting.Store(0)
	e.mu.Unlock()
	e.firing.Wait()
	e.mu.Lock()
	ids := make([]int, 0, len(e.active))
	for i, a := range e.active {
		a.timer.Stop()
		ids = append(ids, i)
	}
	e.mu.Unlock()
	sort.Ints(ids)
	for _, i := range ids {
		e.stopFault(i)
	}
	// A fault whose time ran out as Heal began is being stopped by its
	// timer: it left e.active holding healLock, so wait for it, and for
	// its stop op, before saying every fault is healed (a kill's delayed
	// restart was otherwise still under way, unrecorded, when the run read
	// its final values).
	e.healLock.Lock()
	//lint:ignore SA2001 a wait for the timer's stop, not a critical section
	e.healLock.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	return errors.Join(e.errs...)
}
