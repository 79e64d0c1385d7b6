package runner

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/internal/testenv"

	"github.com/jackc/pgx/v5"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/postgres"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/scenarios"
	"github.com/locktorture/locktorture/workload"
)

func requirePostgres(t *testing.T) {
	t.Helper()
	testenv.Require(t, "postgres")
}

// TestBaselinePostgres: no faults, 5 clients on 2 keys. Each PostgreSQL
// lock is valid (no false alarm) and granted locks under contention, with
// the in-harness resource and with the postgres row. pg-optimistic, which
// takes no lock, is given the postgres resource by itself, loses no update
// and has writes rejected as stale under contention.
func TestBaselinePostgres(t *testing.T) {
	requirePostgres(t)
	for _, tc := range []struct {
		backend, resource string
	}{
		{"pg-advisory", "memory"},
		{"pg-advisory", "postgres"},
		{"pg-advisory-xact", "memory"},
		{"pg-advisory-xact", "postgres"},
		{"pg-skip-locked", "memory"},
		{"pg-skip-locked", "postgres"},
		{"pg-optimistic", ""}, // the scenario says memory: postgres is picked
	} {
		t.Run(tc.backend+"/"+tc.resource, func(t *testing.T) {
			o := scenarios.Overrides{Backend: ptr(tc.backend), Duration: ptr(2 * time.Second)}
			if tc.resource != "" {
				o.Resource = ptr(tc.resource)
			}
			sc := builtin(t, "baseline", o)
			out, _ := runIt(t, sc)
			r := out.Results
			if r.Valid != checker.Valid {
				t.Fatalf("verdict %s, want valid:\n%s", r.Valid, out.Summary)
			}
			if exp := out.Expected.Valid; exp != "valid" {
				t.Errorf("baseline expects %s for %s", exp, tc.backend)
			}
			if tc.backend == "pg-optimistic" {
				if sc.Resource != workload.ResourcePostgres || r.Resource != workload.ResourcePostgres {
					t.Errorf("pg-optimistic ran with resource %q (results say %q), want postgres", sc.Resource, r.Resource)
				}
				if r.Checkers.Mutex != nil {
					t.Errorf("the mutex checker ran on a lock-free backend: %+v", r.Checkers.Mutex)
				}
				lu, f := r.Checkers.LostUpdate, r.Checkers.Fencing
				if lu.AcceptedWrites <= 20 {
					t.Errorf("only %d accepted writes", lu.AcceptedWrites)
				}
				if f.RejectedStale == 0 {
					t.Errorf("5 clients on 2 keys and no write rejected as stale: the compare-and-set is not checking")
				}
				stale := 0
				for _, op := range readHistory(t, out) {
					if op.F == history.Write && op.Type == history.Fail && strings.Contains(op.Error, "stale") {
						stale++
					}
				}
				if stale != f.RejectedStale {
					t.Errorf("%d writes failed as stale in the history, the fencing checker counted %d", stale, f.RejectedStale)
				}
				t.Logf("pg-optimistic: %d accepted writes, %d rejected as stale", lu.AcceptedWrites, f.RejectedStale)
				return
			}
			if sc.Resource != tc.resource {
				t.Errorf("ran with resource %q, want %q", sc.Resource, tc.resource)
			}
			if h := r.Checkers.Mutex.Holds; h <= 20 {
				t.Errorf("only %d holds: the run hardly checked anything", h)
			}
			if r.Checkers.LostUpdate.AcceptedWrites <= 20 {
				t.Errorf("only %d accepted writes", r.Checkers.LostUpdate.AcceptedWrites)
			}
			t.Logf("%s with %s: %d holds", tc.backend, tc.resource, r.Checkers.Mutex.Holds)
		})
	}
}

// TestPGPause: client 0 pauses 2.5s holding a session-level advisory lock.
// The session keeps the lock: client 1's acquires during the pause are all
// busy, and it gets the lock only after client 0 wakes and releases.
func TestPGPause(t *testing.T) {
	requirePostgres(t)
	out, _ := runIt(t, builtin(t, "pg-pause", scenarios.Overrides{}))
	r := out.Results
	if r.Valid != checker.Valid || out.Expected.Valid != "valid" {
		t.Fatalf("verdict %s (expected %q), want valid:\n%s", r.Valid, out.Expected.Valid, out.Summary)
	}
	ops := readHistory(t, out)
	var pauseStart, pauseStop int64 = -1, -1
	for _, op := range ops {
		switch op.F {
		case "start-pause":
			pauseStart = op.Time
		case "stop-pause":
			pauseStop = op.Time
		}
	}
	if pauseStart < 0 || pauseStop < 0 {
		t.Fatalf("no pause in the history")
	}
	busy, granted := 0, 0
	for _, op := range ops {
		if op.Process != 1 || op.F != history.Acquire || op.Time < pauseStart || op.Time > pauseStop {
			continue
		}
		switch op.Type {
		case history.Fail:
			busy++
		case history.OK:
			granted++
		}
	}
	if busy == 0 || granted > 0 {
		t.Errorf("during client 0's pause client 1 had %d busy and %d granted acquires; want some busy and none granted", busy, granted)
	}
	if r.Checkers.Mutex.Holds < 5 {
		t.Errorf("only %d holds", r.Checkers.Mutex.Holds)
	}
}

// TestKleppmannFencedPostgres: Kleppmann's fenced case with the fence
// enforced by PostgreSQL's conditional UPDATE: the paused holder's stale
// write is rejected by the server and no update is lost.
func TestKleppmannFencedPostgres(t *testing.T) {
	requirePostgres(t)
	requireRedis(t)
	out, _ := runIt(t, builtin(t, "kleppmann-fenced", scenarios.Overrides{Resource: ptr("postgres")}))
	c := out.Results.Checkers
	if c.Mutex.Valid != checker.Invalid {
		t.Errorf("mutex should see the stale holder:\n%s", out.Summary)
	}
	if c.Fencing.Valid != checker.Valid || c.Fencing.RejectedStale == 0 {
		t.Errorf("the server should reject the stale write: %+v", c.Fencing)
	}
	if c.LostUpdate.Valid != checker.Valid {
		t.Errorf("no update should be lost: %+v", c.LostUpdate)
	}
	found := false
	for _, op := range readHistory(t, out) {
		if op.F == history.Write && op.Type == history.Fail && strings.Contains(op.Error, "stale fence") && strings.Contains(op.Error, " < ") {
			found = true
		}
	}
	if !found {
		t.Errorf("no write rejected with a \"stale fence F < H\" error")
	}
}

// pgRig is a cluster with the run's PostgreSQL, for tests that drive
// backends and the resource by hand.
func pgRig(t *testing.T) (*cluster.Cluster, *postgres.Postgres) {
	t.Helper()
	requirePostgres(t)
	tmp := t.TempDir()
	c, err := cluster.New(cluster.Options{TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		assertNothingLeft(t, tmp)
	})
	pg, err := postgres.Start(t.Context(), c, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c, pg
}

func fence(n int64) backends.Grant { return backends.Grant{Fence: &n} }

// TestPostgresResourceFencing drives the postgres resource's three fencing
// modes by hand and checks the rule is the server's (the row's fence
// column), with the error naming both fences.
func TestPostgresResourceFencing(t *testing.T) {
	c, pg := pgRig(t)
	ctx := t.Context()
	res := func(mode, key string) workload.Resource {
		r, err := workload.NewResource(ctx, "postgres", workload.ResourceEnv{Cluster: c, Fencing: mode, Keys: []string{key}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	stale := func(err error, msg string) {
		t.Helper()
		if !errors.Is(err, workload.ErrStale) || !strings.Contains(err.Error(), msg) {
			t.Errorf("want a stale rejection %q, got %v", msg, err)
		}
	}
	ok := func(err error) {
		t.Helper()
		if err != nil {
			t.Errorf("want ok, got %v", err)
		}
	}
	column := func(key string) (fence *int64, value int64) {
		t.Helper()
		conn, err := pg.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, "SELECT fence, value FROM "+backends.PGResourceTable+" WHERE key = $1", key).Scan(&fence, &value); err != nil {
			t.Fatal(err)
		}
		return fence, value
	}

	none := res("none", "n")
	ok(none.Write(ctx, "n", 1, fence(9)))
	ok(none.Write(ctx, "n", 2, fence(1)))
	if v, err := none.FinalRead(ctx, "n"); err != nil || v != 2 {
		t.Errorf("none: final read %d, %v; want 2", v, err)
	}

	w := res("writes", "w")
	ok(w.Write(ctx, "w", 1, fence(5)))
	stale(w.Write(ctx, "w", 2, fence(3)), "stale fence 3 < 5")
	ok(w.Write(ctx, "w", 3, fence(5)))         // an equal fence is the same holder
	ok(w.Write(ctx, "w", 4, backends.Grant{})) // no fence, no check
	if _, err := w.Read(ctx, "w", fence(1)); err != nil {
		t.Errorf("writes: a read with a low fence is not checked, got %v", err)
	}
	if f, v := column("w"); f == nil || *f != 5 || v != 4 {
		t.Errorf("writes: row holds fence %v value %d; want 5 and 4", f, v)
	}

	a := res("all", "a")
	if v, err := a.Read(ctx, "a", fence(7)); err != nil || v != 0 {
		t.Errorf("all: first read %d, %v", v, err)
	}
	if f, _ := column("a"); f == nil || *f != 7 {
		t.Errorf("all: the read did not record its fence: %v", f)
	}
	stale(a.Write(ctx, "a", 1, fence(6)), "stale fence 6 < 7")
	_, err := a.Read(ctx, "a", fence(6))
	stale(err, "stale fence 6 < 7")
	ok(a.Write(ctx, "a", 1, fence(8)))
	if v, err := a.FinalRead(ctx, "a"); err != nil || v != 1 {
		t.Errorf("all: final read %d, %v; want 1", v, err)
	}
}

// TestPGAdvisoryXactWriteInLockTransaction: with pg-advisory-xact and the
// postgres resource, the write happens inside the lock's transaction: it
// is invisible to others until the release commits it, and when the
// holder's session is terminated mid-critical-section the write dies with
// the lock and the release fails as not held.
func TestPGAdvisoryXactWriteInLockTransaction(t *testing.T) {
	c, pg := pgRig(t)
	ctx := t.Context()
	keys := []string{"k0"}
	_, factory, err := backends.Lookup("pg-advisory-xact")
	if err != nil {
		t.Fatal(err)
	}
	b, err := factory(ctx, backends.Env{Cluster: c, TTL: time.Second, OpTimeout: 2 * time.Second, Clients: 2, Keys: keys, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	res, err := workload.NewResource(ctx, "postgres", workload.ResourceEnv{Cluster: c, Fencing: "none", Keys: keys, Backend: "pg-advisory-xact"})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	client := func(p int) backends.Client {
		cl, err := b.Client(ctx, backends.ClientEnv{Process: p, Gate: clientfault.NewGate(), Clock: clientfault.NewClock()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	c0, c1 := client(0), client(1)
	final := func() int64 {
		t.Helper()
		v, err := res.FinalRead(ctx, "k0")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	g, err := c0.Acquire(ctx, "k0")
	if err != nil {
		t.Fatal(err)
	}
	v, err := res.Read(ctx, "k0", g)
	if err != nil || v != 0 {
		t.Fatalf("read %d, %v", v, err)
	}
	if err := res.Write(ctx, "k0", v+1, g); err != nil {
		t.Fatal(err)
	}
	// The row's new version was written by the lock's own transaction.
	var same bool
	if err := g.Conn.(pgx.Tx).QueryRow(ctx, "SELECT xmin::text = pg_current_xact_id()::xid::text FROM "+backends.PGResourceTable+" WHERE key = 'k0'").Scan(&same); err != nil || !same {
		t.Errorf("the write is not in the lock's transaction (same xid: %v, %v)", same, err)
	}
	if v := final(); v != 0 {
		t.Errorf("the uncommitted write is visible outside the lock: %d", v)
	}
	if _, err := c1.Acquire(ctx, "k0"); !errors.Is(err, backends.ErrBusy) {
		t.Fatalf("process 1 acquired a held lock: %v", err)
	}

	// The holder's session is terminated before it releases.
	admin, err := pg.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var killed []bool
	// The timeout form waits until the backend has exited (and rolled back).
	rows, err := admin.Query(ctx, "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE application_name = $1", postgres.Application(0))
	if err == nil {
		killed, err = pgx.CollectRows(rows, pgx.RowTo[bool])
	}
	if err != nil || len(killed) != 1 || !killed[0] {
		t.Fatalf("terminating process 0's session: %v, %v", killed, err)
	}
	rerr := c0.Release(ctx, "k0", g)
	if !errors.Is(rerr, backends.ErrNotHeld) || backends.Outcome(rerr) != history.Fail {
		t.Errorf("release after the session was terminated: %v (outcome %s), want not held (fail)", rerr, backends.Outcome(rerr))
	}
	if v := final(); v != 0 {
		t.Errorf("the terminated holder's write survived: %d", v)
	}

	// The lock is free again; a full round commits its write with the release.
	g1, err := c1.Acquire(ctx, "k0")
	if err != nil {
		t.Fatalf("the lock of a terminated session is not free: %v", err)
	}
	if v, err := res.Read(ctx, "k0", g1); err != nil || res.Write(ctx, "k0", v+1, g1) != nil {
		t.Fatalf("round on process 1: %v", err)
	}
	if err := c1.Release(ctx, "k0", g1); err != nil {
		t.Fatal(err)
	}
	if v := final(); v != 1 {
		t.Errorf("after a committed round the value is %d, want 1", v)
	}
	// Process 0 dials a new session on its next acquire.
	g0, err := c0.Acquire(ctx, "k0")
	if err != nil {
		t.Fatalf("process 0 after its session was terminated: %v", err)
	}
	if err := c0.Release(ctx, "k0", g0); err != nil {
		t.Fatal(err)
	}
}

// TestPGSetupConnectIsNotARequest: a client's first connection to
// PostgreSQL is made while the run is set up, so the requests' timeout
// does not bound it. With a timeout far shorter than any SCRAM handshake
// (1µs) the run still starts (before, every client's first connect timed
// out and the run was a harness error); its requests then time out, as
// asked.
func TestPGSetupConnectIsNotARequest(t *testing.T) {
	requirePostgres(t)
	sc := builtin(t, "baseline", scenarios.Overrides{
		Backend:  ptr("pg-advisory"),
		Duration: ptr(500 * time.Millisecond),
		Timeout:  ptr(time.Microsecond),
	})
	out, err := Run(context.Background(), sc, Options{Store: t.TempDir()})
	if err != nil {
		t.Fatalf("run with a 1µs request timeout did not start: %v", err)
	}
	if out.Results == nil {
		t.Fatalf("no results")
	}
}
