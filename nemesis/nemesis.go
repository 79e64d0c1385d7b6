// Package nemesis injects faults into a run and records them in the
// history: each fault kind is one file that registers itself; a Schedule says
// when faults happen, either scripted (at a time, or on a client's event)
// or at random from a seed. Every fault with a duration is recorded as a
// start-<fault>/stop-<fault> pair of nemesis ops, and all are healed by Heal.
package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/history"
)

// Sentinel errors of this package.
var (
	// ErrUnknown is wrapped for a fault name that is not registered.
	ErrUnknown = errors.New("unknown nemesis")
	// ErrTarget is wrapped when a step names a target that does not exist.
	ErrTarget = errors.New("bad nemesis target")
)

// Env is what faults act on.
type Env struct {
	// Gates freeze simulated client processes, one per client.
	Gates []*cluster.Gate
	// Clocks are the clients' own clocks, one per client.
	Clocks []*cluster.Clock
	// Cluster holds the servers.
	Cluster *cluster.Cluster
}

// Target says what a fault hits, and how hard. Each fault reads the
// fields it understands.
type Target struct {
	// Process is a client process, or -1 for none.
	Process int
	// Clients are more client processes (with Process, if set).
	Clients []int
	// Servers name servers: a name ("redis-2") or a letter ("A" is the
	// first server started, "B" the second, ...).
	Servers []string
	// Topology shapes a partition: isolate-client, isolate-server, cut,
	// halves, ring (see partition.go).
	Topology string
	// Direction is both, upstream (requests) or downstream (replies).
	Direction string
	// Latency and Jitter slow a link.
	Latency, Jitter time.Duration
	// Jump moves a clock; Rate makes it drift (1.1 = 10% fast).
	Jump time.Duration
	Rate float64
}

// ClientList returns Process and Clients together, without duplicates.
func (t Target) ClientList() []int {
	var out []int
	seen := map[int]bool{}
	add := func(p int) {
		if p >= 0 && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	add(t.Process)
	for _, p := range t.Clients {
		add(p)
	}
	return out
}

// String describes the target in a few words ("process 0",
// "servers [C] topology cut", "latency 1s"), leaving out what is unset.
func (t Target) String() string {
	var parts []string
	if cs := t.ClientList(); len(cs) == 1 {
		parts = append(parts, fmt.Sprintf("process %d", cs[0]))
	} else if len(cs) > 1 {
		parts = append(parts, fmt.Sprintf("processes %v", cs))
	}
	if len(t.Servers) > 0 {
		parts = append(parts, fmt.Sprintf("servers %v", t.Servers))
	}
	for _, kv := range [][2]string{{"topology", t.Topology}, {"direction", t.Direction}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" "+kv[1])
		}
	}
	for _, kv := range []struct {
		name string
		d    time.Duration
	}{{"latency", t.Latency}, {"jitter", t.Jitter}, {"jump", t.Jump}} {
		if kv.d != 0 {
			parts = append(parts, fmt.Sprintf("%s %s", kv.name, kv.d))
		}
	}
	if t.Rate != 0 {
		parts = append(parts, fmt.Sprintf("rate %g", t.Rate))
	}
	if len(parts) == 0 {
		return "(no target)"
	}
	return strings.Join(parts, ", ")
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
	return fmt.Sprintf("%s %s %s for %s", s.Fault, s.Target, when, s.Duration)
}

// OpNamer is a fault whose history ops are not start-<name>/stop-<name>:
// an instant fault (kill, failover, terminate) names its op, and its stop
// op, if any (kill's "restart"); an empty stop name records nothing.
type OpNamer interface {
	OpNames(fault string) (start, stop string)
}

// LinkUser is a fault that acts on links: the run routes client traffic
// through proxies when a schedule holds one.
type LinkUser interface {
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

// Applier is a fault that does not apply to every backend: Applies says
// why not (the run is refused rather than the fault silently skipped).
type Applier interface {
	Applies(backend string, kinds []string, lease bool) error
}

// Healer ends one injected fault and returns the value to record with its
// stop op.
type Healer func(ctx context.Context) (map[string]any, error)

// Fault is one kind of fault.
type Fault interface {
	// Start injects the fault on t for d (d is recorded; the engine calls
	// the returned Healer when d is over or at Heal). It returns the value
	// recorded with the start op.
	Start(ctx context.Context, env *Env, t Target, d time.Duration) (map[string]any, Healer, error)
	// RandomTarget picks a target for a random schedule.
	RandomTarget(rng *rand.Rand, env *Env) Target
	// Validate checks a scripted target against the run's shape.
	Validate(t Target, clients int) error
}

// Info describes a fault for `locktorture list nemeses`.
type Info struct {
	Name        string
	Description string
	// AppliesTo says which backends it applies to.
	AppliesTo string
}

type entry struct {
	info  Info
	fault Fault
}

var (
	regMu    sync.Mutex
	registry = map[string]entry{}
)

// Register adds a fault kind; it panics on a duplicate (a programming error).
func Register(info Info, f Fault) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[info.Name]; dup {
		panic("nemesis: duplicate " + info.Name)
	}
	registry[info.Name] = entry{info, f}
}

// Lookup returns the fault registered under name.
func Lookup(name string) (Fault, error) {
	regMu.Lock()
	defer regMu.Unlock()
	e, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknown, name, strings.Join(namesLocked(), ", "))
	}
	return e.fault, nil
}

// List describes every registered fault, sorted by name.
func List() []Info {
	regMu.Lock()
	defer regMu.Unlock()
	var out []Info
	for _, n := range namesLocked() {
		out = append(out, registry[n].info)
	}
	return out
}

func namesLocked() []string {
	ns := make([]string, 0, len(registry))
	for n := range registry {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// Step is one scripted fault.
type Step struct {
	// Fault names the fault kind.
	Fault string
	// Target is what it hits.
	Target Target
	// At is the offset from the run's start; used when On is empty.
	At time.Duration
	// On triggers the step on an event instead: the target process's (or,
	// with no target process, any client's) next successful op with this
	// f ("acquire", "read", "write"), at or after At.
	On string
	// Duration is how long the fault lasts.
	Duration time.Duration
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
			if l, ok := f.(LinkUser); ok && l.UsesLinks() {
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
		st := Step{Fault: name, Target: f.RandomTarget(rng, env), At: at, Duration: d}
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

// Validate checks every step of s against the run's shape.
func (s Schedule) Validate(clients int) error {
	for i, st := range s.Script {
		f, err := Lookup(st.Fault)
		if err != nil {
			return fmt.Errorf("nemesis step %d: %w", i+1, err)
		}
		if err := f.Validate(st.Target, clients); err != nil {
			return fmt.Errorf("nemesis step %d: %w", i+1, err)
		}
		if z, ok := f.(ZeroDuration); st.Duration <= 0 && !(ok && z.AllowsZeroDuration()) {
			return fmt.Errorf("nemesis step %d: %s needs a duration", i+1, st.Fault)
		}
	}
	if s.Random != nil {
		for _, n := range s.Random.Faults {
			if _, err := Lookup(n); err != nil {
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

	mu       sync.Mutex
	pending  []int // indexes of steps waiting for their event
	active   map[int]*activeFault
	healed   bool
	errs     []error
	baseCtx  context.Context
	healLock sync.Mutex
	firing   sync.WaitGroup
	fired    map[int]bool
	happened map[int]bool // steps whose fault started (see Missed)
}

type activeFault struct {
	name   string
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
	if op.Type != history.OK || op.IsNemesis() {
		return
	}
	e.mu.Lock()
	var fire []int
	rest := e.pending[:0]
	for _, i := range e.pending {
		s := e.steps[i]
		if s.On == op.F && (s.Target.Process < 0 || s.Target.Process == op.Process) && op.Time >= int64(s.At) && !e.healed {
			fire = append(fire, i)
		} else {
			rest = append(rest, i)
		}
	}
	e.pending = rest
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
	val, heal, err := f.Start(e.baseCtx, e.env, s.Target, s.Duration)
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
	e.record(startName, val)
	a := &activeFault{name: s.Fault, stopOp: stopName, heal: heal}
	e.mu.Lock()
	if e.happened == nil {
		e.happened = map[int]bool{}
	}
	e.happened[i] = true
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
	val, err := a.heal(context.WithoutCancel(e.baseCtx))
	if err != nil {
		e.fail(fmt.Errorf("nemesis: heal %s: %w", a.name, err))
	}
	if a.stopOp != "" {
		e.record(a.stopOp, val)
	}
}

func (e *Engine) record(f string, val map[string]any) {
	op := history.Op{Process: history.NemesisProcess, Type: history.Info, F: f}
	if val != nil {
		op.Value = history.ObjectValue(val)
	}
	if _, err := e.rec.Record(op); err != nil && !errors.Is(err, history.ErrClosed) {
		e.fail(err)
	}
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
	e.mu.Lock()
	defer e.mu.Unlock()
	return errors.Join(e.errs...)
}
