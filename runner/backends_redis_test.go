package runner

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/scenarios"
)

// TestBaselineRedisFamily: no faults, 5 clients on 2 keys. Each Redis-family
// lock is valid (no false alarm) and actually granted locks under
// contention.
func TestBaselineRedisFamily(t *testing.T) {
	t.Parallel() // its own servers, ports and store: beside the other parallel runs
	requireRedis(t)
	for _, backend := range []string{"redis-renew", "redlock", "redsync", "redislock"} {
		t.Run(backend, func(t *testing.T) {
			out, _ := runIt(t, builtin(t, "baseline", scenarios.Overrides{Backend: ptr(backend), Duration: ptr(2 * time.Second)}))
			if out.Results.Valid != checker.Valid {
				t.Fatalf("verdict %s, want valid:\n%s", out.Results.Valid, out.Summary)
			}
			if h := out.Results.Checkers.Mutex.Holds; h <= 20 {
				t.Errorf("only %d holds: the run hardly checked anything", h)
			}
			if exp := out.Expected.Valid; exp != "valid" {
				t.Errorf("baseline expects %s for %s", exp, backend)
			}
			t.Logf("%s: %d holds", backend, out.Results.Checkers.Mutex.Holds)
		})
	}
}

// readHistory loads a run's stored history and checks its format.
func readHistory(t *testing.T, out *Outcome) []history.Op {
	t.Helper()
	ops, err := history.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := history.Validate(t.Context(), ops); err != nil {
		t.Fatalf("history breaks the format (an extend overlapping a client op?): %v", err)
	}
	return ops
}

// TestRenewPause: the watchdog extends the lease (extend ok before the
// pause), but a stop-the-world pause freezes it with its client: the lease
// expires and the other client takes the lock while the paused one still
// believes it holds it.
func TestRenewPause(t *testing.T) {
	t.Parallel() // its own servers, ports and store: beside the other parallel runs
	requireRedis(t)
	out, _ := runIt(t, builtin(t, "renew-pause", scenarios.Overrides{}))
	r := out.Results
	if r.Valid != checker.Invalid || r.Checkers.Mutex.Valid != checker.Invalid {
		t.Fatalf("verdict %s (mutex %s), want invalid:\n%s", r.Valid, r.Checkers.Mutex.Valid, out.Summary)
	}
	if out.Expected.Valid != "invalid" {
		t.Errorf("the scenario expects %q", out.Expected.Valid)
	}
	if v := r.Checkers.Mutex.Violations[0]; v.Earlier.Process != 0 {
		t.Errorf("the first overlap's earlier holder is process %d, want the paused 0: %+v", v.Earlier.Process, v)
	}
	ops := readHistory(t, out)
	pause, extendsBefore := -1, 0
	var releaseAfter *history.Op // process 0's first release completion after the pause
	for i, op := range ops {
		switch {
		case op.F == "start-pause" && pause < 0:
			pause = i
		case op.F == history.Extend && op.Type == history.OK && pause < 0:
			if op.LeaseMS == nil || *op.LeaseMS <= 0 {
				t.Errorf("extend ok without a lease: %+v", op)
			}
			extendsBefore++
		case op.F == history.Release && op.Process == 0 && op.Type != history.Invoke && pause >= 0 && releaseAfter == nil:
			releaseAfter = &ops[i]
		}
	}
	if pause < 0 {
		t.Fatal("no pause in the history")
	}
	if extendsBefore == 0 {
		t.Errorf("no extend ok before the pause: the watchdog did not renew")
	}
	// The lock really was gone on the server: the woken client's release
	// finds another token there.
	if releaseAfter == nil || releaseAfter.Type != history.Fail {
		t.Errorf("the paused client's release after waking: %+v, want fail (not held)", releaseAfter)
	}
}

// TestRenewKeepsLongHold: without faults, holds of 1s under a 300ms TTL
// stay exclusive because the watchdog extends them: the run is valid,
// extends are recorded, and releases after holds longer than the TTL
// still find the lock theirs.
func TestRenewKeepsLongHold(t *testing.T) {
	requireRedis(t)
	const ttl = 300 * time.Millisecond
	out, _ := runIt(t, builtin(t, "baseline", scenarios.Overrides{
		Backend: ptr("redis-renew"), TTL: ptr(ttl), Hold: ptr(time.Second), Duration: ptr(3 * time.Second),
	}))
	if out.Results.Valid != checker.Valid {
		t.Fatalf("verdict %s, want valid:\n%s", out.Results.Valid, out.Summary)
	}
	ops := readHistory(t, out)
	extends := 0
	acquired := map[int]int64{} // process -> time of its acquire ok
	longHeld := 0               // releases ok after a hold longer than the TTL
	for _, op := range ops {
		switch {
		case op.F == history.Extend && op.Type == history.OK:
			extends++
		case op.F == history.Acquire && op.Type == history.OK:
			acquired[op.Process] = op.Time
		case op.F == history.Release && op.Type == history.Invoke:
			if at, ok := acquired[op.Process]; ok && time.Duration(op.Time-at) > ttl {
				acquired[op.Process] = -op.Time // mark: a long hold ended here
			} else {
				delete(acquired, op.Process)
			}
		case op.F == history.Release && op.Type == history.OK:
			if acquired[op.Process] < 0 {
				longHeld++
			}
			delete(acquired, op.Process)
		}
	}
	if extends == 0 {
		t.Errorf("no extend recorded")
	}
	if longHeld == 0 {
		t.Errorf("no hold longer than the %s TTL ended with its lock still held", ttl)
	}
	t.Logf("%d extends, %d long holds released ok, %d holds", extends, longHeld, out.Results.Checkers.Mutex.Holds)
}
