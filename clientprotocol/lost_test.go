package clientprotocol

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/workload"
)

// TestLostEventIsEvidence: an adapter's lost event becomes a lost op of
// its process (an invoke and its ok at one time) before the release the
// harness still sends, and the client's hold ends there.
func TestLostEventIsEvidence(t *testing.T) {
	rec := history.NewRecorder(nil, history.RecorderOptions{Keep: true})
	l, procs := startScript(t, "testdata/good.sh", rec)
	ctx := context.Background()
	res, err := workload.NewMemory(workload.FenceNone)
	if err != nil {
		t.Fatal(err)
	}
	wp := &workload.Procs{Gates: procs.Gates, Clocks: procs.Clocks, History: procs.History}
	cfg := workload.Config{Clients: 1, Keys: []string{"k0"}, Hold: 200 * time.Millisecond, OpTimeout: time.Second}
	// A few rounds: stop is checked between them.
	stop := make(chan struct{})
	go func() { time.Sleep(50 * time.Millisecond); close(stop) }()
	if err := workload.Run(ctx, stop, cfg, l, res, wp); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	ops := rec.History()
	lostAt, releaseAt := -1, -1
	for i, op := range ops {
		switch {
		case op.F == history.Lost && op.Type == history.OK && lostAt < 0:
			lostAt = i
			if inv := ops[i-1]; inv.F != history.Lost || inv.Type != history.Invoke || inv.Time != op.Time || op.Key != "k0" {
				t.Fatalf("lost recorded as %+v, %+v", inv, op)
			}
		case op.F == history.Release && op.Type == history.Invoke && releaseAt < 0:
			releaseAt = i
		}
	}
	if lostAt < 0 || releaseAt < 0 || lostAt > releaseAt {
		t.Fatalf("lost at op %d, release at op %d: want a lost op before the release\n%+v", lostAt, releaseAt, ops)
	}
	if err := history.Validate(ctx, ops); err != nil {
		t.Fatal(err)
	}
	if h := checker.Holds(ops); len(h) == 0 || h[0].End != ops[lostAt].Time {
		t.Fatalf("holds %+v: the first should end at the lost op (%d)", h, ops[lostAt].Time)
	}
}

// TestRetriedReleaseEndsNoLaterHold: a release request names only its key,
// so a retry of an earlier grant's release (retry-release, its outcome
// unknown) sent while the process holds a later grant of the key would
// end that later hold under its holder. The driver answers it not held
// without sending it; the later grant's own release still goes through.
func TestRetriedReleaseEndsNoLaterHold(t *testing.T) {
	rec := history.NewRecorder(nil, history.RecorderOptions{Keep: true})
	l, procs := startScript(t, "testdata/holds.sh", rec)
	ctx := context.Background()
	c, err := l.Client(ctx, backends.ClientEnv{Process: 0, Gate: procs.Gates[0], Clock: procs.Clocks[0], History: procs.History[0]})
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.Acquire(ctx, "k0")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, "k0", first); err != nil {
		t.Fatal(err)
	}
	second, err := c.Acquire(ctx, "k0")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, "k0", first); !errors.Is(err, backends.ErrNotHeld) {
		t.Errorf("the earlier grant's release again: %v, want not held", err)
	}
	if err := c.Release(ctx, "k0", second); err != nil {
		t.Fatalf("the later grant's release: %v (the retry ended its hold)", err)
	}
}

// startScript starts one client process running the shell script, its ops
// recorded by rec; it is closed when the test ends.
func startScript(t *testing.T, script string, rec *history.Recorder) (*Launcher, Procs) {
	t.Helper()
	l := New(Options{Command: []string{"/bin/sh", script}, Dir: t.TempDir(), TTL: time.Second, Timeout: time.Second})
	procs := procsOf(1, rec)
	if err := l.Start(context.Background(), procs); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, procs
}
