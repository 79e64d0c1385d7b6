package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/internal/testenv"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/etcd"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/leakcheck"
	"github.com/locktorture/locktorture/scenarios"
	"github.com/locktorture/locktorture/workload"
)

func requireEtcd(t *testing.T) {
	t.Helper()
	testenv.Require(t, "etcd")
}

// TestBaselineEtcd: no faults, 5 clients on 2 keys, one etcd member. The
// etcd lock is valid (no false alarm), granted many locks under
// contention, and every grant carried a fence (the lock key's create
// revision); the same with the etcd resource fencing every access.
func TestBaselineEtcd(t *testing.T) {
	t.Parallel() // its own servers, ports and store: beside the other parallel runs
	requireEtcd(t)
	for _, tc := range []struct{ resource, fencing string }{
		{"memory", "none"},
		{"etcd", "all"},
	} {
		t.Run(tc.resource, func(t *testing.T) {
			out, _ := runIt(t, builtin(t, "baseline", scenarios.Overrides{
				Backend: ptr("etcd"), Resource: ptr(tc.resource), Fencing: ptr(tc.fencing), Duration: ptr(2 * time.Second)}))
			r := out.Results
			if r.Valid != checker.Valid {
				t.Fatalf("verdict %s, want valid:\n%s", r.Valid, out.Summary)
			}
			if h := r.Checkers.Mutex.Holds; h <= 20 {
				t.Errorf("only %d holds: the run hardly checked anything", h)
			}
			if f := r.Checkers.Fencing; f.FencedWrites == 0 || f.UnfencedWrites != 0 || f.RejectedStale != 0 {
				t.Errorf("every write should carry a fence and none be refused: %+v", f)
			}
			if out.Expected.Valid != "valid" {
				t.Errorf("baseline expects %s for etcd", out.Expected.Valid)
			}
			ops := readHistory(t, out)
			// Fences grow: each grant of a key has a higher create revision.
			last := map[string]int64{}
			for _, op := range ops {
				if op.F == history.Acquire && op.Type == history.OK {
					if op.Fence == nil || *op.Fence <= last[op.Key] {
						t.Fatalf("acquire of %s with fence %v after fence %d", op.Key, op.Fence, last[op.Key])
					}
					last[op.Key] = *op.Fence
				}
			}
			t.Logf("etcd, resource %s: %d holds", tc.resource, r.Checkers.Mutex.Holds)
		})
	}
}

// TestBaselineEtcdThreeMembers: the same workload against a 3-member etcd
// whose leader is killed -9 once the lock has been granted a few times,
// and restarted: raft keeps the lock safe across the election (no
// overlap), and locks are granted before the kill and after the restart.
// The clients run until then, however long the election and the restart
// take on a loaded machine (the run used to last a fixed 3s and want a
// grant in its last second). (Runs the pieces of a run by hand: scenarios
// have no member count.)
func TestBaselineEtcdThreeMembers(t *testing.T) {
	t.Parallel() // its own servers, ports and store: beside the other parallel runs
	requireEtcd(t)
	ctx := context.Background()
	tmp := t.TempDir()
	cl, err := cluster.New(cluster.Options{TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	var e *etcd.Etcd
	defer func() {
		// A 3-member Close waits out a leadership hand-off to a member
		// that is stopping too (TestEtcdThree covers it): crash them first.
		if e != nil {
			for _, m := range e.Members() {
				_ = m.Kill(ctx)
			}
		}
		if err := cl.Close(); err != nil {
			t.Error(err)
		}
		assertNothingLeft(t, tmp)
	}()
	e, err = etcd.Start(ctx, cl, etcd.Options{Ensemble: cluster.Ensemble{Members: 3}})
	if err != nil {
		t.Fatal(err)
	}
	sc := builtin(t, "baseline", scenarios.Overrides{Backend: ptr("etcd")})
	const some = 10 // grants before the kill, and after the restart
	var restarted int64
	crash := func(ctx context.Context, g *grants) error {
		if err := g.wait(ctx, some); err != nil {
			return err
		}
		leader, err := e.Leader(ctx)
		if err != nil {
			return err
		}
		t.Logf("killing the leader, %s", leader.Name())
		if err := leader.Kill(ctx); err != nil {
			return err
		}
		// Down a while: the two others elect a leader without it.
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
		if err := leader.Restart(ctx); err != nil {
			return err
		}
		restarted = g.rec.Now()
		return g.wait(ctx, some)
	}
	r, ops := runOn(t, cl, sc, crash)
	if r.Valid != checker.Valid {
		t.Fatalf("verdict %s, want valid: %+v", r.Valid, r.Checkers.Mutex)
	}
	// Locks were granted after the restart too.
	var lastGrant int64
	var unknown int
	for _, op := range ops {
		if op.F == history.Acquire && op.Type == history.OK {
			lastGrant = op.Time
		}
		if op.Type == history.Info {
			unknown++
		}
	}
	if lastGrant <= restarted {
		t.Errorf("no lock granted after the old leader's restart at %s (last at %s)", time.Duration(restarted), time.Duration(lastGrant))
	}
	t.Logf("3 members, leader killed, restarted at %s: %d holds, %d ops of unknown outcome", time.Duration(restarted).Round(time.Millisecond), r.Checkers.Mutex.Holds, unknown)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// grants counts a run's lock grants as they are recorded, for a fault to
// wait for.
type grants struct {
	rec  *history.Recorder
	mu   sync.Mutex
	n    int
	more chan struct{} // closed (and replaced) at each grant
}

// observe is the recorder's observer.
func (g *grants) observe(op history.Op) {
	if op.F != history.Acquire || op.Type != history.OK {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	close(g.more)
	g.more = make(chan struct{})
}

// wait waits until n more locks are granted, or ctx ends.
func (g *grants) wait(ctx context.Context, n int) error {
	g.mu.Lock()
	want := g.n + n
	g.mu.Unlock()
	for {
		g.mu.Lock()
		got, more := g.n, g.more
		g.mu.Unlock()
		if got >= want {
			return nil
		}
		select {
		case <-more:
		case <-ctx.Done():
			return fmt.Errorf("%d of %d grants: %w", got-want+n, n, ctx.Err())
		}
	}
}

// runOn runs sc's workload on an existing cluster (without the store),
// calling during(ctx, grants) alongside the clients, until it returns
// (sc's duration is not used), and checks the history.
func runOn(t *testing.T, cl *cluster.Cluster, sc *scenarios.Scenario, during func(context.Context, *grants) error) (*checker.Results, []history.Op) {
	t.Helper()
	// A hang guard (etcd never granting again), not a speed limit.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, factory, err := backends.Lookup(sc.Backend)
	if err != nil {
		t.Fatal(err)
	}
	b, err := factory(ctx, backends.Env{Cluster: cl, TTL: sc.TTL.D(), OpTimeout: sc.Timeout.D(), Clients: sc.Clients, Keys: sc.KeyNames(), Seed: sc.Seed})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	res, err := workload.NewResource(ctx, sc.Resource, workload.ResourceEnv{Cluster: cl, Fencing: sc.Fencing, Keys: sc.KeyNames(), Backend: sc.Backend})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	g := &grants{more: make(chan struct{})}
	rec := history.NewRecorder(nil, history.RecorderOptions{Keep: true, Observe: g.observe})
	g.rec = rec
	procs := workload.NewProcs(sc.Clients, rec)
	cfg := workload.Config{Clients: sc.Clients, Keys: sc.KeyNames(), Hold: sc.Hold.D(), ThinkMin: sc.ThinkMin.D(),
		ThinkMax: sc.ThinkMax.D(), OpTimeout: sc.Timeout.D(), Seed: sc.Seed}
	stop := make(chan struct{})
	derr := make(chan error, 1)
	go func() { derr <- during(ctx, g); close(stop) }()
	if err := workload.Run(ctx, stop, cfg, b, res, procs); err != nil {
		t.Fatal(err)
	}
	if err := <-derr; err != nil {
		t.Fatalf("fault: %v", err)
	}
	if err := workload.FinalReads(ctx, sc.KeyNames(), res, rec); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	ops := rec.History()
	if err := history.Validate(ctx, ops); err != nil {
		t.Fatalf("history breaks the format: %v", err)
	}
	r, err := check(ctx, ops, sc.Checkers, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r, ops
}

// TestEtcdPause: the etcd-pause scenario. The paused client's keepalive
// stops with it, etcd expires its lease, the other client takes the lock:
// a stale holder, and a lost update at the unfenced resource.
func TestEtcdPause(t *testing.T) {
	t.Parallel() // its own servers, ports and store: beside the other parallel runs
	requireEtcd(t)
	out, _ := runIt(t, builtin(t, "etcd-pause", scenarios.Overrides{}))
	r := out.Results
	if r.Valid != checker.Invalid || out.Expected.Valid != "invalid" {
		t.Fatalf("verdict %s (expected %s), want invalid:\n%s", r.Valid, out.Expected.Valid, out.Summary)
	}
	m := r.Checkers.Mutex
	if m.Valid != checker.Invalid || m.StaleHolders == 0 || m.DoubleGrants != 0 {
		t.Errorf("want stale holders only: %+v", m)
	}
	if v := m.Violations[0]; v.Earlier.Process != 0 || v.Later.Process != 1 {
		t.Errorf("first overlap: %+v", v)
	}
	if r.Checkers.LostUpdate.Valid != checker.Invalid {
		t.Errorf("the unfenced resource should lose an update: %+v", r.Checkers.LostUpdate)
	}
	if r.Checkers.Linearizable.Valid != checker.Invalid {
		t.Errorf("linearizable disagrees with mutex: %+v", r.Checkers.Linearizable)
	}
	ops := readHistory(t, out)
	// The paused client learns of the expiry only after waking: a failed
	// keepalive or a release refused as not held, never an ok release.
	pauseEnd, learned := int64(-1), false
	for _, op := range ops {
		if op.F == "stop-pause" {
			pauseEnd = op.Time
		}
		if pauseEnd >= 0 && op.Process == 0 && op.Type == history.Fail && (op.F == history.Extend || op.F == history.Release) {
			learned = true
			break
		}
	}
	if !learned {
		t.Error("process 0 never found its lease gone after the pause")
	}
	checkExpected(t, out)
}

// TestEtcdPauseFenced: the same pause, but the resource lives in etcd and a
// write is a transaction guarded by the lock key's create revision. The lock
// still fails (mutex invalid), but the stale write is rejected at the
// resource: fencing and lost-update valid.
func TestEtcdPauseFenced(t *testing.T) {
	t.Parallel() // its own servers, ports and store: beside the other parallel runs
	requireEtcd(t)
	out, _ := runIt(t, builtin(t, "etcd-pause-fenced", scenarios.Overrides{}))
	c := out.Results.Checkers
	if out.Results.Valid != checker.Invalid || c.Mutex.Valid != checker.Invalid {
		t.Errorf("the lock itself is still violated: %s", out.Summary)
	}
	if c.Fencing.Valid != checker.Valid || c.Fencing.RejectedStale == 0 {
		t.Fatalf("the guarded write should reject the stale write: %+v", c.Fencing)
	}
	if rej := c.Fencing.Rejections[0]; rej.Process != 0 || !strings.Contains(rej.Error, "lease expired") {
		t.Errorf("rejection: %+v", rej)
	}
	if c.LostUpdate.Valid != checker.Valid {
		t.Errorf("no update should be lost: %+v", c.LostUpdate)
	}
	checkExpected(t, out)
}

// checkExpected compares each checker with the scenario's expectation.
func checkExpected(t *testing.T, out *Outcome) {
	t.Helper()
	got := out.Results.Checkers.Verdicts()
	if out.Results.Valid.String() != out.Expected.Valid {
		t.Errorf("verdict %s, scenario expects %s", out.Results.Valid, out.Expected.Valid)
	}
	for name, want := range out.Expected.Checkers {
		if g, ok := got[name]; !ok || g.String() != want {
			t.Errorf("%s: %v, scenario expects %s", name, g, want)
		}
	}
}

// TestEtcdKeepaliveFollowsGate: the lease is kept alive by a goroutine of
// the client's own that stops at the client's pause gate. Held past its
// TTL, the lock stays ours (keepalives recorded as extend ok); frozen past
// its TTL, the lease expires, another client gets the lock, and the frozen
// one, woken, is told it lost the lock and cannot release it.
func TestEtcdKeepaliveFollowsGate(t *testing.T) {
	requireEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard, not a speed limit
	defer cancel()
	tmp := t.TempDir()
	cl, err := cluster.New(cluster.Options{TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cl.Close()
		if left := leakcheck.ProcessesUnder(tmp); len(left) > 0 {
			t.Errorf("left running: %v", left)
		}
	}()
	_, factory, err := backends.Lookup("etcd")
	if err != nil {
		t.Fatal(err)
	}
	const ttl = time.Second
	b, err := factory(ctx, backends.Env{Cluster: cl, TTL: ttl, OpTimeout: 500 * time.Millisecond, Clients: 2, Keys: []string{"k"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rec := history.NewRecorder(nil, history.RecorderOptions{Keep: true})
	gate := clientfault.NewGate()
	c0, err := b.Client(ctx, backends.ClientEnv{Process: 0, Gate: gate, Clock: clientfault.NewClock(), History: rec.Proc(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer c0.Close()
	c1, err := b.Client(ctx, backends.ClientEnv{Process: 1, Gate: clientfault.NewGate(), Clock: clientfault.NewClock(), History: rec.Proc(1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()

	g, err := c0.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if g.Fence == nil || !g.HasLease || g.Lease <= 0 || g.Lease > ttl {
		t.Fatalf("grant: %+v", g)
	}
	if err := sleep(ctx, 2*ttl); err != nil {
		t.Fatal(err)
	}
	if _, err := c1.Acquire(ctx, "k"); !errors.Is(err, backends.ErrBusy) {
		t.Fatalf("after 2 TTLs of keepalives the lock should still be held: %v", err)
	}
	var extends int
	for _, op := range rec.History() {
		if op.F == history.Extend && op.Type == history.OK && op.Process == 0 && op.LeaseMS != nil && *op.LeaseMS > 0 {
			extends++
		}
	}
	if extends < 2 {
		t.Errorf("%d extend ok recorded in 2 TTLs, want keepalives every TTL/3", extends)
	}

	gate.Pause()
	var g1 backends.Grant
	for {
		if g1, err = c1.Acquire(ctx, "k"); err == nil {
			break
		}
		if !errors.Is(err, backends.ErrBusy) {
			t.Fatalf("acquire while the holder is frozen: %v", err)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			t.Fatalf("the frozen holder's lease never expired: %v", err)
		}
	}
	if *g1.Fence <= *g.Fence {
		t.Errorf("fence %d after fence %d", *g1.Fence, *g.Fence)
	}
	gate.Resume()
	select {
	case <-g.Lost:
	case <-ctx.Done():
		t.Fatal("the woken client is never told its lock is lost")
	}
	if err := c0.Release(ctx, "k", g); !errors.Is(err, backends.ErrNotHeld) || backends.Outcome(err) != history.Fail {
		t.Errorf("release after expiry: %v, want ErrNotHeld (fail)", err)
	}
	if err := c1.Release(ctx, "k", g1); err != nil {
		t.Errorf("release by the new holder: %v", err)
	}
	// The client makes a fresh lease and can lock again.
	g2, err := c0.Acquire(ctx, "k")
	if err != nil {
		t.Fatalf("acquire with a fresh lease: %v", err)
	}
	if err := c0.Release(ctx, "k", g2); err != nil {
		t.Error(err)
	}
	if err := history.Validate(ctx, rec.History()); err != nil {
		t.Errorf("keepalive records break the history: %v", err)
	}
}
