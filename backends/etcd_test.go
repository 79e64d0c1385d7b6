package backends

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/testenv"
)

// TestEtcdRetriedReleaseTakesNoNewerHold: our etcd lock over a real etcd.
// A release whose outcome is unknown and that did not happen (its request
// never left) leaves the lock key in place; the workload retries it later
// (retry-release) while the client goes on. The client's next acquire of
// the same key is granted on that key — the concurrency Mutex takes an
// existing key of its session as its own, at the same revision — and the
// retried release, whose revision guard matches it, deleted it while its
// holder worked: another client was granted the lock beside it (the
// double grant make test once met). A release of a hold that is not the
// client's latest of the key deletes nothing. A release that did happen
// (its reply lost) leaves a new key for the next acquire.
func TestEtcdRetriedReleaseTakesNoNewerHold(t *testing.T) {
	testenv.Require(t, "etcd")
	b := libraryTestBackend(t, "etcd", 10*time.Second, 2*time.Second)
	ctx := guard(t)
	c0, c1 := libClient(t, b, newTestProc(0)), libClient(t, b, newTestProc(1))
	first, err := c0.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	dead, cancel := context.WithCancel(ctx)
	cancel()
	if err := c0.Release(dead, "k", first); Outcome(err) != history.Info {
		t.Fatalf("release with its request never sent: %v, want an unknown outcome", err)
	}
	second, err := c0.Acquire(ctx, "k")
	if err != nil {
		t.Fatalf("acquire after a release that did not happen: %v, want granted (the client's session holds the key)", err)
	}
	// The retried release must not take it away.
	rerr := c0.Release(ctx, "k", first)
	if !errors.Is(rerr, ErrNotHeld) {
		t.Errorf("the retried release of the first hold: %v, want not held (a later hold is the client's)", rerr)
	}
	if g, err := c1.Acquire(ctx, "k"); err == nil {
		t.Fatalf("the retried release of the first hold (%v) deleted the second: process 1 acquired k (fence %d) while process 0 holds it (fence %d, the first's %d)", rerr, *g.Fence, *second.Fence, *first.Fence)
	}
	if err := c0.Release(ctx, "k", second); err != nil {
		t.Fatal(err)
	}
	g, err := c0.Acquire(ctx, "k")
	if err != nil {
		t.Fatalf("acquire once the release settled: %v", err)
	}
	if *g.Fence == *first.Fence {
		t.Errorf("granted on the first hold's key (revision %d) again", *g.Fence)
	}
	if _, err := c1.Acquire(ctx, "k"); !errors.Is(err, ErrBusy) {
		t.Fatalf("the other client while k is held: %v, want busy", err)
	}
	if err := c0.Release(ctx, "k", g); err != nil {
		t.Fatal(err)
	}

	// A release that happened though its caller never heard (a reply
	// lost) holds nothing back: the next acquire makes a new key.
	g, err = c0.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	// The release happens (the lock key deleted, as the Txn a lost
	// reply answered does) and its caller hears nothing.
	if _, err := c0.(*etcdClient).cli.Delete(ctx, g.Token); err != nil {
		t.Fatal(err)
	}
	if err := c0.Release(dead, "k", g); Outcome(err) != history.Info {
		t.Fatalf("release with its request never sent: %v, want an unknown outcome", err)
	}
	again, err := c0.Acquire(ctx, "k")
	if err != nil {
		t.Fatalf("acquire after a release that happened: %v", err)
	}
	if *again.Fence == *g.Fence {
		t.Errorf("granted on the released key's revision %d", *g.Fence)
	}
	if err := c0.Release(ctx, "k", again); err != nil {
		t.Fatal(err)
	}
}
