package shrink

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/postgres"
	"github.com/locktorture/locktorture/cluster/kinds/redis"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/testenv"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/scenarios"
)

// rtSetup is servers that faults act on in TestScriptRoundTrip: the
// run's shape, the programs it needs, and how to start them.
type rtSetup struct {
	name  string
	shape nemesis.Shape
	needs []string
	start func(ctx context.Context, cl *cluster.Cluster) error
}

// rtSetups are tried in order: each fault is drawn on the first that it
// applies to. A fault that applies to none fails the test.
var rtSetups = []rtSetup{
	{"redis", nemesis.Shape{Clients: 3, Backend: "redis-token", Kinds: []string{"redis"}, Lease: true}, []string{"redis-server"},
		func(ctx context.Context, cl *cluster.Cluster) error {
			_, err := redis.Start(ctx, cl, redis.Options{})
			return err
		}},
	{"postgres", nemesis.Shape{Clients: 3, Backend: "pg-advisory", Kinds: []string{"postgres"}}, []string{"postgres"},
		func(ctx context.Context, cl *cluster.Cluster) error {
			_, err := postgres.Start(ctx, cl, postgres.Options{})
			return err
		}},
	{"sentinel", nemesis.Shape{Clients: 3, Backend: "redis-token", Kinds: []string{"redis"}, Lease: true, Sentinel: true}, []string{"redis-server", "redis-sentinel"},
		func(ctx context.Context, cl *cluster.Cluster) error {
			_, err := redis.StartSentinelGroup(ctx, cl, false)
			return err
		}},
}

// rtEnv starts a setup's servers, with links, for three clients.
func rtEnv(t *testing.T, s rtSetup) *nemesis.Env {
	t.Helper()
	testenv.Require(t, s.needs...)
	cl, err := cluster.New(cluster.Options{TempDir: t.TempDir(), LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	cl.EnableLinks()
	if err := s.start(context.Background(), cl); err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	env := &nemesis.Env{Cluster: cl}
	for range s.shape.Clients {
		env.Gates = append(env.Gates, clientfault.NewGate())
		env.Clocks = append(env.Clocks, clientfault.NewClock())
	}
	return env
}

// draws are the distinct steps a random mix of fault alone plans on env,
// at most n of them.
func draws(t *testing.T, fault string, env *nemesis.Env, n int) []nemesis.Step {
	t.Helper()
	mix := nemesis.Random{Faults: []string{fault}, Interval: 40 * time.Millisecond, Min: 20 * time.Millisecond, Max: 20 * time.Millisecond}
	plan, err := nemesis.Plan(mix, 7, 2*time.Second, env)
	if err != nil {
		t.Fatal(err)
	}
	var out []nemesis.Step
	seen := map[string]bool{}
	for _, st := range plan {
		if k := st.Params.String() + " on " + st.On; !seen[k] && len(out) < n {
			seen[k] = true
			out = append(out, st)
		}
	}
	return out
}

// runSteps runs each step through the nemesis engine in turn, on its
// event (a successful op of its process, recorded and observed) or at
// once, and heals it before the next; it returns the history.
func runSteps(t *testing.T, env *nemesis.Env, steps []nemesis.Step) []history.Op {
	t.Helper()
	ctx := context.Background()
	rec := history.NewRecorder(nil, history.RecorderOptions{})
	defer rec.Close()
	for _, st := range steps {
		st.At = 0
		e := nemesis.NewEngine(ctx, env, rec, []nemesis.Step{st})
		if st.On != "" {
			p := max(0, eventProcess(st.Params))
			op, err := rec.Record(history.Op{Process: p, Type: history.OK, F: st.On, Key: "k0"})
			if err != nil {
				t.Fatal(err)
			}
			e.Observe(op)
		} else {
			e.FireDue()
		}
		if err := e.Heal(ctx); err != nil {
			t.Fatalf("%s: %v", st, err)
		}
	}
	return rec.History()
}

// measured are the keys of a nemesis op's value that say what the
// servers did rather than what the step was: a failover's restart records
// how long the Sentinels took to promote the replica (promoted_ms), which
// differs from one run to the next.
var measured = []string{"promoted_ms"}

// nemesisOps are the f and value of a history's nemesis ops, but for
// their measured keys.
func nemesisOps(ops []history.Op) []string {
	var out []string
	for _, op := range ops {
		if !op.IsNemesis() {
			continue
		}
		v := string(op.Value)
		var m map[string]json.RawMessage
		if json.Unmarshal(op.Value, &m) == nil && m != nil {
			for _, k := range measured {
				delete(m, k)
			}
			if b, err := json.Marshal(m); err == nil {
				v = string(b)
			}
		}
		out = append(out, op.F+" "+v)
	}
	return out
}

// TestScriptRoundTrip: every fault a random mix can draw (every fault
// registered, each on servers it applies to) scripts from the ops it
// recorded, and the script, run through the engine on the same kind of
// servers, records the same nemesis ops.
func TestScriptRoundTrip(t *testing.T) {
	for _, in := range nemesis.List() {
		t.Run(in.Name, func(t *testing.T) {
			// Each on servers of its own: a failover waits seconds for
			// Sentinel, in which the others run.
			t.Parallel()
			i := slices.IndexFunc(rtSetups, func(s rtSetup) bool { return nemesis.Applies(in.Name, s.shape) == nil })
			if i < 0 {
				t.Fatalf("%s applies to none of this test's setups: add one to rtSetups, so that its random draws are shown to script", in.Name)
			}
			s := rtSetups[i]
			env := rtEnv(t, s)
			steps := draws(t, in.Name, env, 6)
			if len(steps) == 0 {
				t.Fatal("a random mix of it planned nothing")
			}
			orig := runSteps(t, env, steps)
			sc := &scenarios.Scenario{Nemesis: scenarios.Nemesis{Random: &scenarios.Random{Faults: []string{in.Name}}}}
			recs, err := fromHistory(orig, eventsOf(sc))
			if err != nil {
				t.Fatalf("scripting %v: %v", nemesisOps(orig), err)
			}
			if len(recs) != len(steps) {
				t.Fatalf("%d steps drawn, %d scripted from %v", len(steps), len(recs), nemesisOps(orig))
			}
			var script scenarios.Script
			for _, r := range recs {
				script = append(script, r.Step)
			}
			replayed := (&scenarios.Scenario{Nemesis: scenarios.Nemesis{Script: script}}).NemesisSchedule().Script
			for j, st := range replayed {
				if err := st.Check(s.shape); err != nil {
					t.Errorf("scripted step %d (%s) does not check: %v", j+1, st, err)
				}
				if want := steps[j].On; st.On != want {
					t.Errorf("scripted step %d fires on %q, the drawn one on %q", j+1, st.On, want)
				}
			}
			// On fresh servers, as the drawn steps had: a failover leaves
			// another primary than it found.
			again := runSteps(t, rtEnv(t, s), replayed)
			if got, want := nemesisOps(again), nemesisOps(orig); !slices.Equal(got, want) {
				t.Errorf("the script recorded\n%q\nthe drawn steps\n%q\nscript:\n%s", got, want, scriptYAML(t, recs))
			}
		})
	}
}
