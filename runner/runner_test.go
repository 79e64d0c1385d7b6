package runner

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/internal/testenv"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster/kinds/redis"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/leakcheck"
	"github.com/locktorture/locktorture/scenarios"
)

func requireRedis(t *testing.T) {
	t.Helper()
	testenv.Require(t, "redis-server")
}

// haveRedis reports whether redis-server is installed.
func haveRedis() bool { return testenv.Has("redis-server") }

// assertNothingLeft checks no server runs from tmp and the cluster's
// temporary directories are gone.
func assertNothingLeft(t *testing.T, tmp string) {
	t.Helper()
	if left := leakcheck.ProcessesUnder(tmp); len(left) > 0 {
		t.Errorf("servers left running: %v", left)
	}
	if left := leakcheck.TempDirsLeft(tmp); len(left) > 0 {
		t.Errorf("temporary directories left: %v", left)
	}
}

func builtin(t *testing.T, name string, o scenarios.Overrides) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Apply(o); err != nil {
		t.Fatal(err)
	}
	return sc
}

func runIt(t *testing.T, sc *scenarios.Scenario) (*Outcome, string) {
	t.Helper()
	store, tmp := t.TempDir(), t.TempDir()
	out, err := Run(context.Background(), sc, Options{Store: store, TempDir: tmp, Command: "test"})
	if err != nil {
		logTails(t, store, err)
		t.Fatalf("run: %v", err)
	}
	assertNothingLeft(t, tmp)
	if w := out.Results.Warnings; len(w) > 0 {
		t.Errorf("the harness's own history breaks its contract: %q", w)
	}
	return out, store
}

// logTails logs the last lines of the server logs a run's error names
// (they go with the test's temporary store).
func logTails(t *testing.T, store string, err error) {
	t.Helper()
	_ = filepath.WalkDir(store, func(p string, d fs.DirEntry, _ error) error {
		if d == nil || d.IsDir() || !strings.HasSuffix(p, ".log") || !strings.Contains(err.Error(), filepath.Base(p)) {
			return nil
		}
		b, rerr := os.ReadFile(p)
		if rerr != nil {
			return nil
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		t.Logf("%s, its last lines:\n%s", filepath.Base(p), strings.Join(lines[max(0, len(lines)-30):], "\n"))
		return nil
	})
}

func ptr[T any](v T) *T { return &v }

func TestKleppmannPause(t *testing.T) {
	requireRedis(t)
	out, store := runIt(t, builtin(t, "kleppmann-pause", scenarios.Overrides{}))
	r := out.Results
	if r.Valid != checker.Invalid {
		t.Fatalf("verdict %s, want invalid:\n%s", r.Valid, out.Summary)
	}
	m := r.Checkers.Mutex
	if m == nil || m.StaleHolders == 0 {
		t.Fatalf("want a stale holder, got %+v", m)
	}
	if v := m.Violations[0]; v.Earlier.Process != 0 || v.Later.Process != 1 || !strings.Contains(v.Description, "stale holder") {
		t.Errorf("first overlap: %+v", v)
	}
	if r.Checkers.LostUpdate.Valid != checker.Invalid {
		t.Errorf("the unfenced resource should lose an update: %+v", r.Checkers.LostUpdate)
	}
	if r.Checkers.Linearizable.Valid != checker.Invalid {
		t.Errorf("linearizable disagrees with mutex: %+v", r.Checkers.Linearizable)
	}
	if !strings.Contains(out.Summary, "stale holder") {
		t.Errorf("summary does not explain the overlap:\n%s", out.Summary)
	}
	for _, f := range []string{"history.jsonl", "results.json", "scenario.yaml", "index.html", "timeline.png", "run.log", "redis-0.log"} {
		if st, err := os.Stat(filepath.Join(out.Dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("store file %s: %v", f, err)
		}
	}
	if target, err := os.Readlink(filepath.Join(store, "latest")); err != nil || filepath.Join(store, target) != out.Dir {
		t.Errorf("store/latest -> %q (%v), want %s", target, err, out.Dir)
	}
	ops, err := history.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := history.Validate(context.Background(), ops); err != nil {
		t.Errorf("stored history breaks the format: %v", err)
	}
	var starts, stops int
	for _, op := range ops {
		switch op.F {
		case "start-pause":
			starts++
		case "stop-pause":
			stops++
		}
	}
	if starts != 1 || stops != 1 {
		t.Errorf("want one start-pause and one stop-pause, got %d and %d", starts, stops)
	}
	// Analysing the stored run gives the same verdict, with no servers.
	again, err := Analyze(context.Background(), out.Dir, Options{}, func(s string) { t.Log(s) })
	if err != nil {
		t.Fatal(err)
	}
	if again.Results.Valid != r.Valid || again.Results.Checkers.Mutex.Count != m.Count {
		t.Errorf("analyze: %s with %d overlaps, run: %s with %d", again.Results.Valid, again.Results.Checkers.Mutex.Count, r.Valid, m.Count)
	}
}

func TestKleppmannFenced(t *testing.T) {
	requireRedis(t)
	out, _ := runIt(t, builtin(t, "kleppmann-fenced", scenarios.Overrides{}))
	c := out.Results.Checkers
	if c.Mutex.Valid != checker.Invalid {
		t.Errorf("mutex should see the stale holder: %s", out.Summary)
	}
	if c.Fencing.Valid != checker.Valid || c.Fencing.RejectedStale == 0 {
		t.Errorf("the fence should reject the stale write: %+v", c.Fencing)
	}
	if c.LostUpdate.Valid != checker.Valid {
		t.Errorf("no update should be lost: %+v", c.LostUpdate)
	}
	if !strings.Contains(out.Summary, "rejected") {
		t.Errorf("summary does not show the rejected write:\n%s", out.Summary)
	}
	// Kleppmann's figure: client 0 locks first with token 33 and pauses;
	// client 1 takes the lock with 34; client 0's write with 33 is rejected.
	if len(c.Mutex.Violations) == 0 {
		t.Fatal("no overlap listed")
	}
	first := c.Mutex.Violations[0]
	if first.Earlier.Process != 0 || first.Earlier.Fence == nil || *first.Earlier.Fence != 33 ||
		first.Later.Process != 1 || first.Later.Fence == nil || *first.Later.Fence != 34 {
		t.Errorf("first overlap %s, want process 0 with fence 33 against process 1 with fence 34", first.Description)
	}
	if len(c.Fencing.Rejections) == 0 || c.Fencing.Rejections[0].Process != 0 || c.Fencing.Rejections[0].Fence == nil || *c.Fencing.Rejections[0].Fence != 33 {
		t.Errorf("rejections %+v, want process 0's write with fence 33", c.Fencing.Rejections)
	}
}

// TestBaseline: no faults, contention on 2 keys. Every real lock is valid
// (no false alarm) and actually granted locks; the in-process mutex, the
// negative control, is caught.
func TestBaseline(t *testing.T) {
	t.Parallel() // its own servers, ports and store: beside the other parallel runs
	requireRedis(t)
	for _, tc := range []struct {
		backend string
		want    checker.Validity
	}{
		{"redis-naive", checker.Valid},
		{"redis-token", checker.Valid},
		{"redis-fenced", checker.Valid},
		{"mutex", checker.Invalid},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			out, _ := runIt(t, builtin(t, "baseline", scenarios.Overrides{Backend: ptr(tc.backend), Duration: ptr(2 * time.Second)}))
			if out.Results.Valid != tc.want {
				t.Fatalf("verdict %s, want %s:\n%s", out.Results.Valid, tc.want, out.Summary)
			}
			if h := out.Results.Checkers.Mutex.Holds; h < 20 {
				t.Errorf("only %d holds: the run hardly checked anything", h)
			}
			if exp := out.Expected.Valid; exp != tc.want.String() {
				t.Errorf("scenario expects %s for %s, test wants %s", exp, tc.backend, tc.want)
			}
		})
	}
}

// failingBackend starts a server and then fails, or panics: the run must
// still stop that server and remove the store directory it began.
type failingBackend struct{ panic bool }

func init() {
	for _, fb := range []struct {
		name string
		fb   failingBackend
	}{{"test-fail-after-start", failingBackend{}}, {"test-panic-after-start", failingBackend{panic: true}}} {
		backends.Register(backends.Info{Name: fb.name, Description: "test only", Kinds: []string{"redis"}}, func(ctx context.Context, env backends.Env) (backends.Backend, error) {
			if _, err := redis.Start(ctx, env.Cluster, redis.Options{}); err != nil {
				return nil, err
			}
			if fb.fb.panic {
				panic("backend exploded")
			}
			return nil, errors.New("backend refused to start")
		})
	}
}

func TestNoServerLeftAfterFailure(t *testing.T) {
	requireRedis(t)
	for _, name := range []string{"test-fail-after-start", "test-panic-after-start"} {
		t.Run(name, func(t *testing.T) {
			store, tmp := t.TempDir(), t.TempDir()
			sc := builtin(t, "baseline", scenarios.Overrides{Backend: ptr(name)})
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Logf("recovered: %v", r)
					}
				}()
				_, err := Run(context.Background(), sc, Options{Store: store, TempDir: tmp})
				if err == nil || errors.Is(err, ErrBadInput) {
					t.Errorf("want a harness error, got %v", err)
				}
			}()
			assertNothingLeft(t, tmp)
			runs, _ := filepath.Glob(filepath.Join(store, "baseline", name, "*"))
			if len(runs) != 0 {
				t.Errorf("half-written store left: %v", runs)
			}
		})
	}
}

// TestInterruptedRun: a run interrupted once its clients hold locks (on
// its first grant: a fixed time could fall before the server is even up on
// a loaded machine) ends with ErrInterrupted, leaves nothing running, and
// keeps the history so far, which can be checked.
func TestInterruptedRun(t *testing.T) {
	requireRedis(t)
	store, tmp := t.TempDir(), t.TempDir()
	sc := builtin(t, "baseline", scenarios.Overrides{Duration: ptr(time.Minute)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	grant := func(op history.Op) {
		if op.F == history.Acquire && op.Type == history.OK {
			cancel()
		}
	}
	_, err := Run(ctx, sc, Options{Store: store, TempDir: tmp, Observe: grant})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("want ErrInterrupted, got %v", err)
	}
	assertNothingLeft(t, tmp)
	// The history so far is kept, and can be checked.
	runs, _ := filepath.Glob(filepath.Join(store, "baseline", "redis-token", "*", "history.jsonl"))
	if len(runs) != 1 {
		t.Fatalf("want the interrupted run's history, got %v", runs)
	}
	out, err := Analyze(context.Background(), runs[0], Options{}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if out.Results.Checkers.Mutex == nil || out.Results.Checkers.Mutex.Holds == 0 {
		t.Errorf("the interrupted history checked nothing: %+v", out.Results)
	}
}

func TestBadInputLeavesNoStore(t *testing.T) {
	store := t.TempDir()
	sc := builtin(t, "baseline", scenarios.Overrides{})
	sc.Backend = "no-such-lock"
	_, err := Run(context.Background(), sc, Options{Store: store})
	if !errors.Is(err, ErrBadInput) {
		t.Fatalf("want ErrBadInput, got %v", err)
	}
	if ents, _ := os.ReadDir(store); len(ents) != 0 {
		t.Errorf("store written for a bad scenario: %v", ents)
	}
}

func TestAnalyzeTruncatedHistory(t *testing.T) {
	requireRedis(t)
	out, _ := runIt(t, builtin(t, "kleppmann-pause", scenarios.Overrides{}))
	data, err := os.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// Cut the file in the middle of a line, as a killed harness would.
	cut := filepath.Join(t.TempDir(), "history.jsonl")
	n := len(data) * 3 / 4
	for data[n-1] != '\n' { // back to a line's start, then 10 bytes into it
		n--
	}
	n += 10
	if err := os.WriteFile(cut, data[:n], 0o644); err != nil {
		t.Fatal(err)
	}
	var warned []string
	got, err := Analyze(context.Background(), filepath.Dir(cut), Options{}, func(s string) { warned = append(warned, s) })
	if err != nil {
		t.Fatal(err)
	}
	if !got.Results.Truncated || len(warned) == 0 || !strings.Contains(warned[0], "incomplete") {
		t.Errorf("the dropped line is not reported: truncated=%v warnings=%q", got.Results.Truncated, warned)
	}
	if got.Results.Valid != checker.Invalid {
		t.Errorf("the partial history still shows the stale holder; got %s", got.Results.Valid)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(cut), "results.json")); err != nil {
		t.Errorf("results.json not written beside the history: %v", err)
	}
}

func waitTick() { time.Sleep(5 * time.Millisecond) }
