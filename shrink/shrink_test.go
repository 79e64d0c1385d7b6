package shrink

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/internal/testenv"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/runner"
	"github.com/locktorture/locktorture/scenarios"
)

// small is a short failing run: client 0 pauses past its 300ms lease
// while holding the lock (the failure), with a slow link before it and a
// partition after it that do not matter. The run goes on 900ms past the
// partition's start, so the pause alone is tried in a run of 1.25s (the
// faults phase keeps that tail): long enough for another client to take
// the lock every time, not at the edge of failing, where a loaded
// machine may tip a re-run either way and the search take another path.
const small = `name: shrink-test
backend: redis-token
clients: 3
keys: 2
ttl: 300ms
hold: 20ms
duration: 3s
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
	var log bytes.Buffer
	r, err := Shrink(context.Background(), dir, Options{Reruns: 2, TempDir: tmp, Log: &log})
	// What each candidate gave, should the search have gone another way.
	defer func() {
		if t.Failed() {
			t.Logf("shrink.log:\n%s", log.String())
		}
	}()
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

// pauseJudge stands in for the candidate runs of a shrink: a run fails
// mutex exactly when client 0 pauses for 400ms or more, two clients or
// more run, and the run lasts 400ms past the pause's start (its 300ms
// lease runs out and another client takes the lock before the end). It records every scenario it
// is asked about. Real runs sit at the edge of failing near the end of a
// search and may go either way; this judge never does, so what it tests
// is the search itself: the same answers give the same candidates, in
// the same order, and the same shrunk.yaml.
type pauseJudge struct {
	dir   string
	asked []string
}

func (j *pauseJudge) run(_ context.Context, sc *scenarios.Scenario, _ string) (*runner.Outcome, error) {
	b, err := sc.Marshal()
	if err != nil {
		return nil, err
	}
	j.asked = append(j.asked, string(b))
	fails := false
	for _, st := range sc.Nemesis.Script {
		if st.Fault == "pause" && st.For.D() >= 400*time.Millisecond && sc.Clients >= 2 && sc.Duration.D() >= st.At.D()+400*time.Millisecond {
			fails = true
		}
	}
	v := checker.Valid
	if fails {
		v = checker.Invalid
	}
	res := &checker.Results{Valid: v, Scenario: sc.Name, Checkers: checker.Checkers{Mutex: &checker.MutexResult{Valid: v}}}
	return &runner.Outcome{Results: res, Dir: j.dir}, nil
}

func TestShrinkDeterministic(t *testing.T) {
	dir := failingRun(t)
	var got [2][]byte
	var asked [2][]string
	for i := range got {
		j := &pauseJudge{dir: t.TempDir()}
		if err := os.WriteFile(filepath.Join(j.dir, "history.jsonl"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Shrink(context.Background(), dir, Options{Reruns: 2, TempDir: t.TempDir(), run: j.run})
		if err != nil {
			t.Fatal(err)
		}
		if got[i], err = r.Shrunk.Marshal(); err != nil {
			t.Fatal(err)
		}
		asked[i] = j.asked
		// The judge's answer is the smallest there is on the grid: the
		// pause alone, 400ms rounded up to 500ms, two clients, one key,
		// and the run 400ms past the pause's start, rounded up.
		s := r.Shrunk
		if len(s.Nemesis.Script) != 1 || s.Nemesis.Script[0].Fault != "pause" {
			t.Fatalf("shrunk to %+v, want the pause alone", s.Nemesis.Script)
		}
		st := s.Nemesis.Script[0]
		if st.For.D() != 500*time.Millisecond || s.Clients != 2 || s.Keys != 1 {
			t.Errorf("shrunk to %s with the pause %s, want 2 clients, 1 key, a 500ms pause", r.ShrunkShape(), st.For)
		}
		if end := st.At.D() + 400*time.Millisecond; s.Duration.D() < end || s.Duration.D() >= end+grid {
			t.Errorf("shrunk to a %s run, want the first on the grid at or past %s", s.Duration, end)
		}
	}
	if string(got[0]) != string(got[1]) {
		t.Fatalf("two shrinks of one run differ:\n%s\n---\n%s", got[0], got[1])
	}
	if !slices.Equal(asked[0], asked[1]) {
		t.Fatalf("two shrinks of one run tried different runs (%d and %d)", len(asked[0]), len(asked[1]))
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

// chaos is the built-in chaos scenario made short: Kleppmann's pause
// first (client 0 frozen on its first read for 900ms, past its 300ms
// lease: the failure), then a random mix of every fault that applies to
// redis-token. Seed 59 draws each of them within 2.3s of the 3s run:
// latency, kill-session, kill, a client and a server clock, a pause, a
// partition, a lost reply and a server pause. The failure is first seen
// early, so the shrink starts from the faults before it, in a run cut 2s
// after it (one candidate per re-run, so the test stays short).
const chaos = `name: shrink-chaos-test
backend: redis-token
clients: 3
keys: 1
ttl: 300ms
hold: 20ms
duration: 3s
timeout: 200ms
think_min: 5ms
think_max: 20ms
seed: 59
nemesis:
  script:
    - fault: pause
      process: 0
      on: read
      for: 900ms
  random:
    faults: [all]
    interval: 200ms
    min: 50ms
    max: 100ms
checkers: [mutex, linearizable, fencing, lost-update, stats]
`

// TestShrinkChaosRun shrinks a chaos run in which every fault its random
// mix can draw struck: each is scripted from the ops it recorded, and the
// shrink ends with a smaller scenario that still fails.
func TestShrinkChaosRun(t *testing.T) {
	testenv.Require(t, "redis-server")
	sc, err := scenarios.Parse([]byte(chaos), "chaos.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := runner.Run(context.Background(), sc, runner.Options{Store: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if out.Results.Valid != checker.Invalid {
		t.Fatalf("the chaos run is %s, not invalid", out.Results.Valid)
	}
	var log bytes.Buffer
	defer func() {
		if t.Failed() {
			t.Logf("shrink.log:\n%s", log.String())
		}
	}()
	r, err := Shrink(context.Background(), out.Dir, Options{Reruns: 1, TempDir: t.TempDir(), Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	drawable := sc.NemesisSchedule().Random.Faults
	if len(drawable) < 8 {
		t.Fatalf("the random mix draws from %v only", drawable)
	}
	struck, scripted := map[string]bool{}, map[string]bool{}
	for _, op := range r.OriginalOps {
		if f, _, ok := faultOf(op.F); ok && op.IsNemesis() {
			struck[f] = true
		}
	}
	for _, rec := range r.Faults {
		scripted[rec.Step.Fault] = true
	}
	for _, f := range drawable {
		if !struck[f] {
			t.Errorf("%s never struck in the run: pick another seed", f)
		}
		if !scripted[f] {
			t.Errorf("%s struck but was not scripted", f)
		}
	}
	s := r.Shrunk
	if s == nil || r.ShrunkResults == nil || r.ShrunkResults.Valid != checker.Invalid {
		t.Fatal("no failing shrunk scenario")
	}
	if len(s.Nemesis.Script) >= len(r.Faults) || s.Duration.D() >= sc.Duration.D() {
		t.Errorf("shrunk to %s, from %s: not smaller", r.ShrunkShape(), r.OriginalShape())
	}
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scenarios.Parse(b, FileShrunk); err != nil {
		t.Fatalf("shrunk.yaml does not load: %v\n%s", err, b)
	}
	t.Logf("%d faults struck, shrunk in %d candidates, %d runs, to %s:\n%s", len(r.Faults), r.Candidates, r.Runs, r.ShrunkShape(), b)
}

// TestFaultsPhaseLeavesTimeAfterFaults: a run whose faults go on to its end
// (a random mix does) leaves almost no time after its last fault. A subset
// of its early faults still gets time to show its failure: here client 0's
// pause at 300ms, which fails the judge only when the run goes on 1s past
// the pause's end, shrinks alone — with the subset's run cut to the
// original's 200ms after its last fault start, it could never fail and
// the late, harmless pause of client 1 was kept.
func TestFaultsPhaseLeavesTimeAfterFaults(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"scenario.yaml": "name: late-tail\nbackend: redis-token\nclients: 2\nkeys: 1\nttl: 300ms\nduration: 5s\nnemesis:\n  random:\n    faults: [pause]\n    interval: 4s\n",
		"results.json":  `{"valid":false,"checkers":{"mutex":{"valid":false}}}`,
		"history.jsonl": `{"index":0,"time":300000000,"process":-1,"type":"info","f":"start-pause","value":{"process":0,"ms":1000}}
{"index":1,"time":1300000000,"process":-1,"type":"info","f":"stop-pause","value":{"process":0}}
{"index":2,"time":4800000000,"process":-1,"type":"info","f":"start-pause","value":{"process":1,"ms":200}}
{"index":3,"time":5000000000,"process":-1,"type":"info","f":"stop-pause","value":{"process":1}}
`,
	}
	for n, s := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	jdir := t.TempDir()
	if err := os.WriteFile(filepath.Join(jdir, "history.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	judge := func(_ context.Context, sc *scenarios.Scenario, _ string) (*runner.Outcome, error) {
		v := checker.Valid
		for _, st := range sc.Nemesis.Script {
			if st.Fault == "pause" && pausedProc(st) == 0 && st.For.D() >= time.Second && sc.Clients >= 2 &&
				sc.Duration.D() >= st.At.D()+st.For.D()+time.Second {
				v = checker.Invalid
			}
		}
		return &runner.Outcome{Results: &checker.Results{Valid: v, Checkers: checker.Checkers{Mutex: &checker.MutexResult{Valid: v}}}, Dir: jdir}, nil
	}
	r, err := Shrink(context.Background(), dir, Options{Reruns: 1, TempDir: t.TempDir(), run: judge})
	if err != nil {
		t.Fatal(err)
	}
	s := r.Shrunk.Nemesis.Script
	if len(s) != 1 || pausedProc(s[0]) != 0 {
		t.Fatalf("shrunk to %d faults %+v, want client 0's pause alone", len(s), s)
	}
}

// pausedProc is the client a pause step freezes, or -1.
func pausedProc(st scenarios.Step) int {
	if p, ok := st.Params.(*nemesis.PauseParams); ok && p.Process != nil {
		return *p.Process
	}
	return -1
}
