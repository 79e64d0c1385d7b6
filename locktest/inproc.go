package locktest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/cluster/kinds/redis"
	"github.com/locktorture/locktorture/history"
)

// In-process clients (Suite.InProcess): the user's lock as a backend of
// the harness, registered under a name of its own for each Run call, whose
// clients are goroutines of the test process. A pause then stops a client
// at its next step only: the lock's own goroutines keep running.

var (
	inprocMu    sync.Mutex
	inprocNames = map[string]bool{}
)

// inprocBackend registers the suite's lock as a backend and returns its
// name. The name is the call's (one per Run call).
func inprocBackend(s Suite, n int) string {
	kinds := append([]string(nil), s.kinds()...)
	sort.Strings(kinds)
	name := fmt.Sprintf("locktest-%d-%s", n, strings.Join(kinds, "-"))
	inprocMu.Lock()
	defer inprocMu.Unlock()
	if inprocNames[name] {
		return name
	}
	inprocNames[name] = true
	_, execFactory, _ := backends.Lookup("exec")
	backends.Register(backends.Info{
		Name: name, Description: "a lock under go test (locktest, in-process clients)",
		Servers: strings.Join(kinds, ", "), Kinds: kinds, Lease: true, Sentinel: slices.Contains(kinds, redis.Kind),
		Options: func() backends.Options { return backends.FreeOptions{} },
	}, func(ctx context.Context, env backends.Env) (backends.Backend, error) {
		env.ExecServers = kinds
		if _, err := execFactory(ctx, env); err != nil { // starts the servers (none when they are external: LOCKTEST_SERVERS)
			return nil, err
		}
		return &inprocLock{s: s, env: env}, nil
	})
	return name
}

type inprocLock struct {
	s   Suite
	env backends.Env
}

func (b *inprocLock) Close() error { return nil }

// Client builds process ce.Process's lock with the addresses of its own
// links to the servers and their credentials.
func (b *inprocLock) Client(ctx context.Context, ce backends.ClientEnv) (backends.Client, error) {
	sv, auth := configOf(b.env.Cluster, ce.Process)
	c := &inprocClient{ce: ce, timeout: b.env.OpTimeout, lost: map[string]chan struct{}{}}
	cfg := Config{Servers: sv, Auth: auth, TTL: b.env.TTL, Timeout: b.env.OpTimeout, Process: ce.Process,
		events: &events{extended: c.extended, lost: c.lostKey}}
	nctx, cancel := context.WithTimeout(ctx, newTimeout) // ends when New returns, as in a client process
	l, err := b.s.New(nctx, cfg)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("new lock: %w", err)
	}
	c.lock = l
	return c, nil
}

type inprocClient struct {
	ce      backends.ClientEnv
	lock    Lock
	timeout time.Duration
	mu      sync.Mutex
	lost    map[string]chan struct{}
}

// harnessErr maps the lock's errors onto the backends' own.
func harnessErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrBusy):
		return fmt.Errorf("%w: %w", backends.ErrBusy, err)
	case errors.Is(err, ErrNotHeld):
		return fmt.Errorf("%w: %w", backends.ErrNotHeld, err)
	}
	return err
}

// Acquire asks the lock. A Lost for key from Acquire's call on ends the
// grant it returns (the channel is the grant's from the start).
func (c *inprocClient) Acquire(ctx context.Context, key string) (backends.Grant, error) {
	lost := make(chan struct{})
	c.mu.Lock()
	c.lost[key] = lost
	c.mu.Unlock()
	g, err := c.lock.Acquire(ctx, key)
	if err != nil {
		c.mu.Lock()
		if c.lost[key] == lost {
			delete(c.lost, key)
		}
		c.mu.Unlock()
		return backends.Grant{}, harnessErr(err)
	}
	bg := backends.Grant{Lease: max(g.Lease, 0), HasLease: g.Lease != 0, Lost: lost}
	if g.Fenced {
		bg.Fence = history.Int64(g.Fence)
	}
	return bg, nil
}

func (c *inprocClient) Release(ctx context.Context, key string, _ backends.Grant) error {
	c.mu.Lock()
	delete(c.lost, key)
	c.mu.Unlock()
	return harnessErr(c.lock.Release(ctx, key))
}

func (c *inprocClient) Close() error { return c.lock.Close() }

// extended records a renewal the lock's watchdog reports (dropped when
// the client's own op does not end within the request timeout).
func (c *inprocClient) extended(key string, lease time.Duration, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	ext, ierr := c.ce.History.InvokeBackground(ctx, history.Op{F: history.Extend, Key: key})
	if ierr != nil {
		return
	}
	op := history.Op{Type: backends.Outcome(harnessErr(err)), F: history.Extend, Key: key}
	if err != nil {
		op.Error = err.Error()
	} else if lease > 0 {
		op.LeaseMS = history.Int64(lease.Milliseconds())
	}
	_, _ = ext.Complete(op)
}

func (c *inprocClient) lostKey(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.lost[key]; ok {
		close(ch)
		delete(c.lost, key)
	}
}
