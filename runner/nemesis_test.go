package runner

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/leakcheck"
	"github.com/locktorture/locktorture/scenarios"
)

// parse builds a scenario from YAML text.
func parse(t *testing.T, text string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Parse([]byte(text), t.Name()+".yaml")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// nemesisOps returns the history's nemesis ops by f.
func nemesisOps(t *testing.T, dir string) map[string][]history.Op {
	t.Helper()
	ops, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := history.Validate(context.Background(), ops); err != nil {
		t.Errorf("history breaks the format: %v", err)
	}
	out := map[string][]history.Op{}
	for _, op := range ops {
		if op.IsNemesis() {
			out[op.F] = append(out[op.F], op)
		}
	}
	return out
}

const nemesisBase = `
name: nemesis-test
backend: redis-token
clients: 3
keys: 2
ttl: 1s
hold: 20ms
duration: 2s
timeout: 300ms
`

// TestNemeses runs each fault against real Redis: the faults are recorded
// as start/stop pairs (or kill/restart), healed by the end, and leave no
// proxy listener, no stopped process and no server behind.
func TestNemeses(t *testing.T) {
	requireRedis(t)
	for _, tc := range []struct {
		name, step string
		want       []string // nemesis ops expected, once each
		value      string   // in the start op's value
	}{
		{"partition isolate-client", "fault: partition\n      topology: isolate-client\n      process: 0\n      at: 300ms\n      for: 800ms",
			[]string{"start-partition", "stop-partition"}, `"p0":["A"]`},
		{"partition one-way", "fault: partition\n      process: 1\n      servers: [A]\n      direction: downstream\n      at: 300ms\n      for: 800ms",
			[]string{"start-partition", "stop-partition"}, `"direction":"downstream"`},
		{"latency", "fault: latency\n      process: 0\n      latency: 400ms\n      at: 300ms\n      for: 800ms",
			[]string{"start-latency", "stop-latency"}, `"latency_ms":400`},
		{"server-pause", "fault: server-pause\n      servers: [A]\n      at: 300ms\n      for: 800ms",
			[]string{"start-server-pause", "stop-server-pause"}, `"servers":["A"]`},
		{"kill and restart", "fault: kill\n      servers: [A]\n      at: 300ms\n      for: 500ms",
			[]string{"kill", "restart"}, `"restart_after_ms":500`},
		{"client clock", "fault: clock\n      process: 2\n      jump: -3s\n      rate: 1.5\n      at: 300ms\n      for: 800ms",
			[]string{"start-clock", "stop-clock"}, `"jump_ms":-3000`},
		{"server clock", "fault: clock\n      servers: [A]\n      jump: 3s\n      at: 300ms\n      for: 100ms",
			[]string{"start-clock", "stop-clock"}, `"effect":"ttl-shortened"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := parse(t, nemesisBase+"nemesis:\n  script:\n    - "+tc.step+"\n")
			store, tmp := t.TempDir(), t.TempDir()
			out, err := Run(context.Background(), sc, Options{Store: store, TempDir: tmp})
			if err != nil {
				t.Fatal(err)
			}
			assertNothingLeft(t, tmp)
			if st := leakcheck.StoppedUnder(tmp); len(st) > 0 {
				t.Errorf("stopped processes left: %v", st)
			}
			if l := leakcheck.Listeners(os.Getpid()); len(l) > 0 {
				t.Errorf("listeners left in the harness: %v", l)
			}
			ops := nemesisOps(t, out.Dir)
			for _, f := range tc.want {
				if len(ops[f]) != 1 {
					t.Errorf("want one %s op, got %d (all: %v)", f, len(ops[f]), keys(ops))
				}
			}
			if start := ops[tc.want[0]]; len(start) > 0 && !strings.Contains(string(start[0].Value), tc.value) {
				t.Errorf("%s value %s lacks %s", tc.want[0], start[0].Value, tc.value)
			}
			if out.Results.Checkers.Mutex.Holds == 0 {
				t.Errorf("no lock granted: %s", out.Summary)
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestRandomScheduleIsSeeded: two runs with one seed plan the same faults,
// targets and offsets; another seed plans others.
func TestRandomScheduleIsSeeded(t *testing.T) {
	requireRedis(t)
	plan := func(seed string) string {
		sc := parse(t, nemesisBase+"seed: "+seed+"\nnemesis:\n  random:\n    faults: [pause, partition, latency, clock, server-pause, kill]\n    interval: 300ms\n    min: 100ms\n    max: 300ms\n")
		out, err := Run(context.Background(), sc, Options{Store: t.TempDir(), TempDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(out.Dir, "run.log"))
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, l := range strings.Split(string(b), "\n") {
			if i := strings.Index(l, "nemesis plan:"); i >= 0 {
				lines = append(lines, l[i:])
			}
		}
		if len(lines) < 3 {
			t.Fatalf("only %d planned faults", len(lines))
		}
		return strings.Join(lines, "\n")
	}
	a, b, c := plan("7"), plan("7"), plan("8")
	if a != b {
		t.Errorf("same seed, different plans:\n%s\n---\n%s", a, b)
	}
	if a == c {
		t.Errorf("different seeds, same plan:\n%s", a)
	}
}

// TestInapplicableNemesisRefused: a clock fault on a backend without a
// lease is refused with a clear error, not skipped.
func TestInapplicableNemesisRefused(t *testing.T) {
	_, err := scenarios.Parse([]byte("name: x\nbackend: mutex\nnemesis:\n  random:\n    faults: [partition]\n    interval: 1s\n"), "x.yaml")
	if err == nil || !regexp.MustCompile(`x\.yaml:\d+: .*partition does not apply to mutex`).MatchString(err.Error()) {
		t.Errorf("want a refusal naming the fault and backend, got %v", err)
	}
}

// TestInterruptedDuringFaults: Ctrl-C in the middle of a partition and a
// server pause leaves no proxy listener, no stopped process, no server.
func TestInterruptedDuringFaults(t *testing.T) {
	requireRedis(t)
	sc := parse(t, strings.Replace(nemesisBase, "duration: 2s", "duration: 1m", 1)+`nemesis:
  script:
    - fault: partition
      topology: isolate-client
      process: 0
      at: 100ms
      for: 1m
    - fault: server-pause
      servers: [A]
      at: 200ms
      for: 1m
`)
	store, tmp := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once both faults are in place (the server is stopped).
		for len(leakcheck.StoppedUnder(tmp)) == 0 {
			waitTick()
		}
		cancel()
	}()
	_, err := Run(ctx, sc, Options{Store: store, TempDir: tmp})
	if err == nil {
		t.Fatal("an interrupted run reported success")
	}
	assertNothingLeft(t, tmp)
	if st := leakcheck.StoppedUnder(tmp); len(st) > 0 {
		t.Errorf("stopped processes left: %v", st)
	}
	if l := leakcheck.Listeners(os.Getpid()); len(l) > 0 {
		t.Errorf("proxy listeners left: %v", l)
	}
}
