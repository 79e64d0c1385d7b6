package nemesis_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/nemesis"
)

func gates(n int) []*clientfault.Gate {
	gs := make([]*clientfault.Gate, n)
	for i := range gs {
		gs[i] = clientfault.NewGate()
	}
	return gs
}

// proc is a `process:` key.
func proc(p int) nemesis.Proc { return nemesis.Proc{Process: &p} }

// pp is pause's params for process p.
func pp(p int) *nemesis.PauseParams { return &nemesis.PauseParams{Proc: proc(p)} }

// servers is a `servers:` key.
func servers(names ...string) nemesis.ServerSet { return nemesis.ServerSet{Servers: names} }

func memRecorder(t *testing.T) *history.Recorder {
	t.Helper()
	rec := history.NewRecorder(nil, history.RecorderOptions{})
	t.Cleanup(func() { rec.Close() })
	return rec
}

// waitFor polls cond until it holds. The guard only stops a broken build
// from hanging the test binary; it asserts nothing about speed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	guard := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(guard) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// nemesisOps returns the f and decoded value of every op, checking each is
// a nemesis info op.
func nemesisOps(t *testing.T, rec *history.Recorder) ([]string, []map[string]int64) {
	t.Helper()
	var fs []string
	var vals []map[string]int64
	for _, op := range rec.History() {
		if op.Process != history.NemesisProcess || op.Type != history.Info || op.Key != "" {
			t.Errorf("not a nemesis info op: %+v", op)
		}
		var v map[string]int64
		if err := json.Unmarshal(op.Value, &v); err != nil {
			t.Errorf("op %d value %s: %v", op.Index, op.Value, err)
		}
		fs = append(fs, op.F)
		vals = append(vals, v)
	}
	return fs, vals
}

func TestPlanDeterministic(t *testing.T) {
	env := &nemesis.Env{Gates: gates(3)}
	mix := nemesis.Random{Faults: []string{"pause"}, Interval: time.Second, Min: 100 * time.Millisecond, Max: 2 * time.Second}
	length := time.Minute

	a, err := nemesis.Plan(mix, 7, length, env)
	if err != nil {
		t.Fatal(err)
	}
	b, err := nemesis.Plan(mix, 7, length, env)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) < 5 {
		t.Fatalf("only %d steps in a minute at a 1s interval", len(a))
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed, different plans")
	}
	c, err := nemesis.Plan(mix, 8, length, env)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(a, c) {
		t.Error("different seeds, same plan")
	}

	for _, steps := range [][]nemesis.Step{a, c} {
		for i, st := range steps {
			if st.At >= length || st.At < 0 {
				t.Errorf("step %d at %s, outside [0, %s)", i, st.At, length)
			}
			if i > 0 && st.At <= steps[i-1].At {
				t.Errorf("step %d at %s, not after step %d at %s", i, st.At, i-1, steps[i-1].At)
			}
			if i > 0 && st.At < steps[i-1].At+steps[i-1].Duration {
				t.Errorf("step %d starts at %s before step %d ends", i, st.At, i-1)
			}
			if st.Duration < mix.Min || st.Duration > mix.Max {
				t.Errorf("step %d lasts %s, outside [%s, %s]", i, st.Duration, mix.Min, mix.Max)
			}
			// A random pause strikes inside a critical section: on the
			// client's next read at or after its planned time.
			if p, ok := st.Params.(*nemesis.PauseParams); st.Fault != "pause" || st.On != "read" || !ok || p.EventProcess() < 0 || p.EventProcess() >= 3 {
				t.Errorf("step %d: %+v", i, st)
			}
		}
	}
	// A planned schedule validates.
	if err := (nemesis.Schedule{Script: a}).Validate(nemesis.Shape{Clients: 3}); err != nil {
		t.Errorf("planned steps do not validate: %v", err)
	}

	// Nothing to plan.
	for _, r := range []nemesis.Random{{}, {Faults: []string{"pause"}}} {
		if steps, err := nemesis.Plan(r, 1, length, env); err != nil || len(steps) != 0 {
			t.Errorf("Plan(%+v) = %v, %v", r, steps, err)
		}
	}
	if _, err := nemesis.Plan(nemesis.Random{Faults: []string{"meteor"}, Interval: time.Second}, 1, length, env); !errors.Is(err, nemesis.ErrUnknown) {
		t.Errorf("unknown fault: %v", err)
	}
}

func TestEngineOnEvent(t *testing.T) {
	env := &nemesis.Env{Gates: gates(2)}
	rec := memRecorder(t)
	steps := []nemesis.Step{{Fault: "pause", Params: pp(0), On: history.Read, Duration: time.Hour}}
	e := nemesis.NewEngine(context.Background(), env, rec, steps)
	if !reflect.DeepEqual(e.Steps(), steps) {
		t.Errorf("Steps() = %+v", e.Steps())
	}

	e.Observe(history.Op{Process: 0, Type: history.OK, F: history.Read, Key: "k0", Value: history.IntValue(0)})
	if !env.Gates[0].Paused() {
		t.Fatal("gate 0 not paused after process 0's ok read")
	}
	if env.Gates[1].Paused() {
		t.Error("gate 1 paused")
	}
	fs, vals := nemesisOps(t, rec)
	if !reflect.DeepEqual(fs, []string{"start-pause"}) {
		t.Fatalf("ops %v, want [start-pause]", fs)
	}
	if vals[0]["process"] != 0 || vals[0]["ms"] != time.Hour.Milliseconds() {
		t.Errorf("start-pause value %v", vals[0])
	}

	// A step fires once.
	e.Observe(history.Op{Process: 0, Type: history.OK, F: history.Read})
	if n := rec.Len(); n != 1 {
		t.Errorf("%d ops after a second read, want 1", n)
	}

	if err := e.Heal(context.Background()); err != nil {
		t.Errorf("Heal: %v", err)
	}
	if env.Gates[0].Paused() {
		t.Error("gate 0 still paused after Heal")
	}
	fs, vals = nemesisOps(t, rec)
	if !reflect.DeepEqual(fs, []string{"start-pause", "stop-pause"}) {
		t.Fatalf("ops %v, want [start-pause stop-pause]", fs)
	}
	if p, ok := vals[1]["process"]; !ok || p != 0 {
		t.Errorf("stop-pause value %v", vals[1])
	}
	if err := history.Validate(context.Background(), rec.History()); err != nil {
		t.Error(err)
	}
	// Healing twice records nothing more.
	if err := e.Heal(context.Background()); err != nil {
		t.Error(err)
	}
	if n := rec.Len(); n != 2 {
		t.Errorf("%d ops after a second Heal, want 2", n)
	}
}

func TestEngineObserveIgnores(t *testing.T) {
	tests := []struct {
		name string
		step nemesis.Step
		op   history.Op
	}{
		{"other process", nemesis.Step{Params: pp(0), On: "read"}, history.Op{Process: 1, Type: history.OK, F: "read"}},
		{"other op", nemesis.Step{Params: pp(0), On: "read"}, history.Op{Process: 0, Type: history.OK, F: "write"}},
		{"invoke", nemesis.Step{Params: pp(0), On: "read"}, history.Op{Process: 0, Type: history.Invoke, F: "read"}},
		{"fail", nemesis.Step{Params: pp(0), On: "read"}, history.Op{Process: 0, Type: history.Fail, F: "read"}},
		{"info", nemesis.Step{Params: pp(0), On: "acquire"}, history.Op{Process: 0, Type: history.Info, F: "acquire"}},
		{"nemesis op", nemesis.Step{Params: pp(0), On: "read"}, history.Op{Process: history.NemesisProcess, Type: history.OK, F: "read"}},
		{"before At", nemesis.Step{Params: pp(0), On: "read", At: time.Hour}, history.Op{Process: 0, Type: history.OK, F: "read", Time: int64(time.Minute)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := &nemesis.Env{Gates: gates(2)}
			rec := memRecorder(t)
			st := tc.step
			st.Fault, st.Duration = "pause", time.Hour
			e := nemesis.NewEngine(context.Background(), env, rec, []nemesis.Step{st})
			e.Observe(tc.op)
			if env.Gates[0].Paused() || env.Gates[1].Paused() {
				t.Error("a gate was paused")
			}
			if n := rec.Len(); n != 0 {
				t.Errorf("%d ops recorded", n)
			}
			// The step is still armed: the right op fires it.
			e.Observe(history.Op{Process: 0, Type: history.OK, F: st.On, Time: int64(st.At)})
			if !env.Gates[0].Paused() {
				t.Error("the step no longer fires on the op it waits for")
			}
			if err := e.Heal(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestEngineTimed(t *testing.T) {
	env := &nemesis.Env{Gates: gates(2)}
	rec := memRecorder(t)
	steps := []nemesis.Step{
		{Fault: "pause", Params: pp(1), At: 5 * time.Millisecond, Duration: time.Hour},
		{Fault: "pause", Params: pp(0), At: 0, Duration: time.Hour},
		{Fault: "pause", Params: pp(0), On: "write", Duration: time.Hour}, // not timed
	}
	e := nemesis.NewEngine(context.Background(), env, rec, steps)
	e.Run(context.Background(), make(chan struct{})) // returns once every timed step fired
	if !env.Gates[0].Paused() || !env.Gates[1].Paused() {
		t.Fatalf("after Run: gate 0 paused %v, gate 1 paused %v", env.Gates[0].Paused(), env.Gates[1].Paused())
	}
	fs, vals := nemesisOps(t, rec)
	if !reflect.DeepEqual(fs, []string{"start-pause", "start-pause"}) {
		t.Fatalf("ops %v", fs)
	}
	// Fired in order of At, not of the list.
	if vals[0]["process"] != 0 || vals[1]["process"] != 1 {
		t.Errorf("fired out of order: %v", vals)
	}
	if err := e.Heal(context.Background()); err != nil {
		t.Error(err)
	}
	if env.Gates[0].Paused() || env.Gates[1].Paused() {
		t.Error("a gate is still paused after Heal")
	}
	fs, _ = nemesisOps(t, rec)
	if !reflect.DeepEqual(fs, []string{"start-pause", "start-pause", "stop-pause", "stop-pause"}) {
		t.Errorf("ops %v", fs)
	}
}

// TestEngineHealsOnTimer lets a short fault run out by itself.
func TestEngineHealsOnTimer(t *testing.T) {
	env := &nemesis.Env{Gates: gates(1)}
	rec := memRecorder(t)
	e := nemesis.NewEngine(context.Background(), env, rec, []nemesis.Step{{Fault: "pause", Params: pp(0), Duration: time.Millisecond}})
	e.Run(context.Background(), nil)
	waitFor(t, "the pause to end", func() bool { return rec.Len() == 2 })
	if env.Gates[0].Paused() {
		t.Error("gate still paused after stop-pause was recorded")
	}
	fs, vals := nemesisOps(t, rec)
	if !reflect.DeepEqual(fs, []string{"start-pause", "stop-pause"}) || vals[0]["ms"] != 1 {
		t.Errorf("ops %v %v", fs, vals)
	}
	if err := e.Heal(context.Background()); err != nil {
		t.Error(err)
	}
	if rec.Len() != 2 {
		t.Error("Heal recorded a stop for a fault already healed")
	}
}

// TestEngineHealWaitsForTimerStop: a fault whose time runs out as Heal
// begins is being stopped by its timer; Heal returns only once that stop
// (and its op) is done, so a run never reads its final values while a
// server is still being restarted.
func TestEngineHealWaitsForTimerStop(t *testing.T) {
	env := &nemesis.Env{Gates: gates(1)}
	entered, release := make(chan struct{}), make(chan struct{})
	rec := history.NewRecorder(nil, history.RecorderOptions{Observe: func(op history.Op) {
		if op.F == "stop-pause" {
			close(entered)
			<-release // the timer's stop goes on until released
		}
	}})
	t.Cleanup(func() { rec.Close() })
	e := nemesis.NewEngine(context.Background(), env, rec, []nemesis.Step{{Fault: "pause", Params: pp(0), Duration: time.Millisecond}})
	e.Run(context.Background(), nil)
	<-entered
	healed := make(chan struct{})
	go func() {
		if err := e.Heal(context.Background()); err != nil {
			t.Error(err)
		}
		close(healed)
	}()
	select {
	case <-healed:
		t.Fatal("Heal returned while the pause's timer was still stopping it")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	<-healed
}

func TestEngineRunStops(t *testing.T) {
	env := &nemesis.Env{Gates: gates(1)}
	rec := memRecorder(t)
	e := nemesis.NewEngine(context.Background(), env, rec, []nemesis.Step{{Fault: "pause", Params: pp(0), At: time.Hour, Duration: time.Second}})
	stop := make(chan struct{})
	close(stop)
	e.Run(context.Background(), stop) // must return, not wait an hour
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.Run(ctx, nil)
	if env.Gates[0].Paused() || rec.Len() != 0 {
		t.Error("a stopped Run fired its step")
	}
}

func TestEngineHealDisarms(t *testing.T) {
	env := &nemesis.Env{Gates: gates(1)}
	rec := memRecorder(t)
	steps := []nemesis.Step{
		{Fault: "pause", Params: pp(0), At: 0, Duration: time.Hour},
		{Fault: "pause", Params: pp(0), On: "read", Duration: time.Hour},
	}
	e := nemesis.NewEngine(context.Background(), env, rec, steps)
	if err := e.Heal(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.Run(context.Background(), nil)
	e.Observe(history.Op{Process: 0, Type: history.OK, F: history.Read})
	if env.Gates[0].Paused() {
		t.Error("a step fired after Heal")
	}
	if n := rec.Len(); n != 0 {
		t.Errorf("%d ops recorded after Heal", n)
	}
}

func TestEngineAlreadyPaused(t *testing.T) {
	env := &nemesis.Env{Gates: gates(1)}
	rec := memRecorder(t)
	steps := []nemesis.Step{
		{Fault: "pause", Params: pp(0), On: "read", Duration: time.Hour},
		{Fault: "pause", Params: pp(0), On: "read", Duration: time.Hour},
	}
	e := nemesis.NewEngine(context.Background(), env, rec, steps)
	e.Observe(history.Op{Process: 0, Type: history.OK, F: history.Read}) // fires both
	fs, _ := nemesisOps(t, rec)
	if !reflect.DeepEqual(fs, []string{"start-pause"}) {
		t.Errorf("two pauses of one gate recorded %v", fs)
	}
	if err := e.Heal(context.Background()); err != nil {
		t.Error(err)
	}
	fs, _ = nemesisOps(t, rec)
	if !reflect.DeepEqual(fs, []string{"start-pause", "stop-pause"}) {
		t.Errorf("after Heal: %v", fs)
	}
	if env.Gates[0].Paused() {
		t.Error("gate still paused")
	}

	// A gate paused by someone else: the engine records nothing and does
	// not resume what it did not pause.
	env2 := &nemesis.Env{Gates: gates(1)}
	env2.Gates[0].Pause()
	rec2 := memRecorder(t)
	e2 := nemesis.NewEngine(context.Background(), env2, rec2, steps[:1])
	e2.Observe(history.Op{Process: 0, Type: history.OK, F: history.Read})
	if err := e2.Heal(context.Background()); err != nil {
		t.Error(err)
	}
	if rec2.Len() != 0 || !env2.Gates[0].Paused() {
		t.Errorf("foreign pause: %d ops, paused %v", rec2.Len(), env2.Gates[0].Paused())
	}
}

func TestEngineReportsStartErrors(t *testing.T) {
	env := &nemesis.Env{Gates: gates(1)}
	rec := memRecorder(t)
	e := nemesis.NewEngine(context.Background(), env, rec, []nemesis.Step{
		{Fault: "pause", Params: pp(3), Duration: time.Second},
		{Fault: "meteor", Params: pp(0), Duration: time.Second},
	})
	e.Run(context.Background(), nil)
	err := e.Heal(context.Background())
	if !errors.Is(err, nemesis.ErrTarget) || !errors.Is(err, nemesis.ErrUnknown) {
		t.Errorf("Heal returned %v, want both the target and the unknown-fault error", err)
	}
	if rec.Len() != 0 {
		t.Errorf("%d ops recorded for faults that never started", rec.Len())
	}
}

func TestScheduleValidate(t *testing.T) {
	pause := func(p int) nemesis.Step {
		return nemesis.Step{Fault: "pause", Params: pp(p), Duration: time.Second}
	}
	tests := []struct {
		name string
		s    nemesis.Schedule
		is   error // nil with has == "" means valid
		has  string
	}{
		{name: "empty", s: nemesis.Schedule{}},
		{name: "good", s: nemesis.Schedule{Script: []nemesis.Step{pause(0), pause(1)}, Random: &nemesis.Random{Faults: []string{"pause"}, Interval: time.Second, Min: time.Millisecond, Max: time.Second}}},
		{name: "process too high", s: nemesis.Schedule{Script: []nemesis.Step{pause(0), pause(2)}}, is: nemesis.ErrTarget, has: "step 2"},
		{name: "negative process", s: nemesis.Schedule{Script: []nemesis.Step{pause(-1)}}, is: nemesis.ErrTarget, has: "step 1"},
		{name: "unknown fault", s: nemesis.Schedule{Script: []nemesis.Step{{Fault: "meteor", Duration: time.Second}}}, is: nemesis.ErrUnknown, has: "meteor"},
		{name: "no duration", s: nemesis.Schedule{Script: []nemesis.Step{{Fault: "pause", Params: pp(0)}}}, has: "duration"},
		{name: "unknown random fault", s: nemesis.Schedule{Random: &nemesis.Random{Faults: []string{"pause", "meteor"}, Interval: time.Second}}, is: nemesis.ErrUnknown, has: "meteor"},
		{name: "random without interval", s: nemesis.Schedule{Random: &nemesis.Random{Faults: []string{"pause"}}}, has: "interval"},
		{name: "random max below min", s: nemesis.Schedule{Random: &nemesis.Random{Faults: []string{"pause"}, Interval: time.Second, Min: time.Second, Max: time.Millisecond}}, has: "max"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Validate(nemesis.Shape{Clients: 2})
			if tc.is == nil && tc.has == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("errors.Is(%v, %v) is false", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.has) {
				t.Errorf("error %q does not mention %q", err, tc.has)
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	if _, err := nemesis.Lookup("pause"); err != nil {
		t.Fatal(err)
	}
	_, err := nemesis.Lookup("meteor")
	if !errors.Is(err, nemesis.ErrUnknown) || !strings.Contains(err.Error(), "pause") {
		t.Errorf("Lookup(meteor) = %v, want ErrUnknown listing pause", err)
	}
	found := false
	for _, in := range nemesis.List() {
		if in.Name == "pause" && in.Description != "" {
			found = true
		}
	}
	if !found {
		t.Error("List() lacks a described pause")
	}
	if !(nemesis.Schedule{}).Empty() || (nemesis.Schedule{Script: []nemesis.Step{{}}}).Empty() ||
		!(nemesis.Schedule{Random: &nemesis.Random{}}).Empty() {
		t.Error("Empty() wrong")
	}
}

func TestStepString(t *testing.T) {
	tests := []struct {
		step nemesis.Step
		want string
	}{
		{nemesis.Step{Fault: "pause", Params: pp(0), On: "read", Duration: 2500 * time.Millisecond},
			"pause process 0 on read for 2.5s"},
		{nemesis.Step{Fault: "kill", Params: &nemesis.ServerParams{ServerSet: servers("C")}, At: 1200 * time.Millisecond},
			"kill servers [C] at 1.2s for 0s"},
		{nemesis.Step{Fault: "kill", Params: &nemesis.ServerParams{Proc: proc(0), ServerSet: servers("C")}, On: "acquire"},
			"kill process 0, servers [C] on acquire for 0s"},
		{nemesis.Step{Fault: "partition", Params: &nemesis.PartitionParams{ClientSet: nemesis.ClientSet{Proc: proc(1), Clients: []int{2}}, ServerSet: servers("A", "B"), Topology: "cut", Direction: "downstream"}, At: time.Second, Duration: 2 * time.Second},
			"partition processes [1 2], servers [A B], topology cut, direction downstream at 1s for 2s"},
		{nemesis.Step{Fault: "clock", Params: &nemesis.ClockParams{ClientSet: nemesis.ClientSet{Proc: proc(0)}, Jump: nemesis.Duration(5 * time.Second), Rate: 1.5}, On: "acquire", At: time.Second, Duration: 100 * time.Millisecond},
			"clock process 0, jump 5s, rate 1.5 on acquire after 1s for 100ms"},
		{nemesis.Step{Fault: "latency", Params: &nemesis.LatencyParams{Latency: nemesis.Duration(time.Second), Jitter: nemesis.Duration(10 * time.Millisecond)}, Duration: time.Hour},
			"latency latency 1s, jitter 10ms at 0s for 1h0m0s"},
		{nemesis.Step{Fault: "failover", Params: &nemesis.FailoverParams{}},
			"failover (no target) at 0s for 0s"},
		{nemesis.Step{Fault: "failover"},
			"failover (no target) at 0s for 0s"},
	}
	for _, tc := range tests {
		if got := tc.step.String(); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}
