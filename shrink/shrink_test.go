package shrink

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/internal/testenv"
	"github.com/locktorture/locktorture/runner"
	"github.com/locktorture/locktorture/scenarios"
)

// small is a short failing run: client 0 pauses past its 300ms lease
// while holding the lock (the failure), with a slow link before it and a
// partition after it that do not matter.
const small = `name: shrink-test
backend: redis-token
clients: 3
keys: 2
ttl: 300ms
hold: 20ms
duration: 2s
timeout: 200ms
seed: 5
nemesis:
  script:
    - fault: latency
      process: 1
      latency: 20ms
      at: 100ms
      for: 150ms
    - fault: pause
      process: 0
      on: read
      at: 300ms
      for: 900ms
    - fault: partition
      process: 2
      at: 1.6s
      for: 200ms
checkers: [mutex, linearizable, fencing, lost-update, stats]
`

// failingRun makes the small run in a store of its own and returns its
// directory.
func failingRun(t *testing.T) string {
	t.Helper()
	testenv.Require(t, "redis-server")
	sc, err := scenarios.Parse([]byte(small), "small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := runner.Run(context.Background(), sc, runner.Options{Store: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if out.Results.Valid != checker.Invalid {
		t.Fatalf("the run to shrink is %s, not invalid", out.Results.Valid)
	}
	return out.Dir
}

func TestShrinkRealRun(t *testing.T) {
	dir := failingRun(t)
	tmp := t.TempDir()
	r, err := Shrink(context.Background(), dir, Options{Reruns: 2, TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Faults) != 3 {
		t.Fatalf("recorded %d faults, want 3", len(r.Faults))
	}
	s := r.Shrunk
	if s == nil || len(s.Nemesis.Script) != 1 || s.Nemesis.Script[0].Fault != "pause" {
		t.Fatalf("shrunk to %+v, want the pause alone", s)
	}
	if len(r.Kept) != 1 || r.Kept[0] != 1 {
		t.Errorf("kept %v, want [1] (the pause)", r.Kept)
	}
	if s.Clients != 2 || s.Keys != 1 || s.Duration.D() >= r.Original.Duration.D() {
		t.Errorf("shrunk to %s, want 2 clients, 1 key and a shorter run than %s", r.ShrunkShape(), r.Original.Duration)
	}
	if len(r.ShrunkOps) == 0 || r.ShrunkResults == nil || r.ShrunkResults.Valid != checker.Invalid {
		t.Errorf("no failing run of the shrunk scenario kept")
	}
	// shrunk.yaml loads as a plain scenario file.
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scenarios.Parse(b, FileShrunk); err != nil {
		t.Fatalf("shrunk.yaml does not load: %v\n%s", err, b)
	}
	// The scratch store is gone, and the user's store has no new run.
	if left, _ := filepath.Glob(filepath.Join(tmp, "locktorture-shrink-*")); len(left) > 0 {
		t.Errorf("scratch left behind: %v", left)
	}
	runs, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), "*"))
	if len(runs) != 1 {
		t.Errorf("the run's store holds %v, want only the run", runs)
	}
}

func TestShrinkDeterministic(t *testing.T) {
	dir := failingRun(t)
	var got [2][]byte
	for i := range got {
		r, err := Shrink(context.Background(), dir, Options{Reruns: 2, TempDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if got[i], err = r.Shrunk.Marshal(); err != nil {
			t.Fatal(err)
		}
	}
	if string(got[0]) != string(got[1]) {
		t.Fatalf("two shrinks of one run differ:\n%s\n---\n%s", got[0], got[1])
	}
}

func TestShrinkInterrupted(t *testing.T) {
	dir := failingRun(t)
	ctx, cancel := context.WithCancel(context.Background())
	runs := 0
	r, err := Shrink(ctx, dir, Options{Reruns: 1, TempDir: t.TempDir(), Progress: func(p Progress) {
		runs++
		if p.Best != nil && runs >= 2 {
			cancel()
		}
	}})
	if !errors.Is(err, runner.ErrInterrupted) {
		t.Fatalf("err = %v, want interrupted", err)
	}
	if r == nil || r.Shrunk == nil {
		t.Fatal("no best scenario kept on an interrupt")
	}
}

// Load refuses what is not a failing run with faults, before any server
// starts.
func TestLoadRefuses(t *testing.T) {
	write := func(t *testing.T, files map[string]string) string {
		d := t.TempDir()
		for n, s := range files {
			if err := os.WriteFile(filepath.Join(d, n), []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	sc := "name: x\nbackend: redis-token\n"
	invalid := `{"valid":false,"checkers":{"mutex":{"valid":false}}}`
	tests := []struct {
		name  string
		files map[string]string
		want  error
	}{
		{"no run", map[string]string{}, errNoRun},
		{"a valid run", map[string]string{"history.jsonl": "", "results.json": `{"valid":true,"checkers":{}}`, "scenario.yaml": sc}, errNotInvalid},
		{"an unknown run", map[string]string{"history.jsonl": "", "results.json": `{"valid":"unknown","checkers":{}}`, "scenario.yaml": sc}, errNotInvalid},
		{"no faults", map[string]string{"history.jsonl": `{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","key":"k0"}` + "\n", "results.json": invalid, "scenario.yaml": sc}, errNoFaults},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(write(t, tc.files))
			if !errors.Is(err, tc.want) || !errors.Is(err, runner.ErrBadInput) {
				t.Fatalf("err = %v, want %v (bad input)", err, tc.want)
			}
		})
	}
}
