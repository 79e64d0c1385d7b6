package runner

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/scenarios"
)

// faultScenario is a short run of backend with one scripted nemesis step.
func faultScenario(t *testing.T, backend, step string) *scenarios.Scenario {
	t.Helper()
	text := "name: fault-check\nbackend: " + backend + "\nclients: 2\nkeys: 1\nttl: 1s\nhold: 10ms\nduration: 600ms\n" +
		"timeout: 500ms\nthink_min: 1ms\nthink_max: 5ms\nseed: 1\nnemesis:\n  script:\n" + step
	sc, err := scenarios.Parse([]byte(text), "fault-check.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestFaultThatCannotHappenIsRefused: a step naming a server that does not
// exist, or a time past the run's end, is bad input before the run — never
// a run that checks nothing and says valid.
func TestFaultThatCannotHappenIsRefused(t *testing.T) {
	cases := []struct{ name, backend, step, want string }{
		{"at past the end", "mutex", "    - {fault: pause, process: 0, at: 1h, for: 1s}\n", "not before the run ends"},
	}
	if haveRedis() {
		cases = append(cases,
			struct{ name, backend, step, want string }{"no server Z", "redis-token", "    - {fault: kill, servers: [Z], at: 100ms, for: 0s}\n", `no server "Z"`},
			struct{ name, backend, step, want string }{"no server B of one", "redis-token", "    - {fault: server-pause, servers: [B], at: 100ms, for: 100ms}\n", `no server "B"`},
			struct{ name, backend, step, want string }{"isolate-server Q", "redis-token", "    - {fault: partition, topology: isolate-server, servers: [Q], at: 100ms, for: 100ms}\n", `no server "Q"`},
		)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := t.TempDir()
			out, err := Run(context.Background(), faultScenario(t, tc.backend, tc.step), Options{Store: store, TempDir: t.TempDir()})
			if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
				var v string
				if out != nil {
					v = out.Results.Valid.String()
				}
				t.Fatalf("got verdict %q, error %v; want bad input saying %q", v, err, tc.want)
			}
			if ents, _ := os.ReadDir(store + "/fault-check/" + tc.backend); len(ents) != 0 {
				t.Errorf("a refused run left %d run directories", len(ents))
			}
		})
	}
}

// TestFaultThatNeverHappenedIsUnknown: a planned step whose event never
// came makes a valid run unknown, with the reason; an invalid run stays
// invalid.
func TestFaultThatNeverHappenedIsUnknown(t *testing.T) {
	sc := faultScenario(t, "mutex", "    - {fault: pause, process: 1, on: release, at: 500ms, for: 1s}\n")
	ctx := context.Background()
	rec := history.NewRecorder(nil, history.RecorderOptions{})
	engine := nemesis.NewEngine(ctx, &nemesis.Env{}, rec, sc.NemesisSchedule().Script)
	if err := engine.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	missed := engine.Missed(1)
	if len(missed) != 1 {
		t.Fatalf("missed %v, want the one step", missed)
	}
	r := &checker.Results{Valid: checker.Valid}
	noteMissed(r, missed)
	if r.Valid != checker.Unknown || !strings.Contains(r.Note, "never happened: pause process 1 on release") {
		t.Errorf("got %s (%q); want unknown naming the pause", r.Valid, r.Note)
	}
	r = &checker.Results{Valid: checker.Invalid}
	noteMissed(r, missed)
	if r.Valid != checker.Invalid {
		t.Errorf("an invalid run became %s", r.Valid)
	}
}
