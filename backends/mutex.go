package backends

import (
	"context"
	"sync"
)

// The mutex backend is the "works on my laptop" lock: an in-process mutex in
// each simulated process. Within one process it excludes; across processes
// it excludes nothing, exactly like a sync.Mutex in each of several
// replicas. It has no lease and no fence. It must fail: it is the negative
// control that proves the checkers can see.
func init() {
	Register(Info{
		Name:        "mutex",
		Description: "an in-process mutex per simulated process (negative control: must fail)",
		Servers:     "none",
		Kinds:       []string{},
	}, func(ctx context.Context, env Env) (Backend, error) { return mutexBackend{}, nil })
}

type mutexBackend struct{}

func (mutexBackend) Client(ctx context.Context, c ClientEnv) (Client, error) {
	return &mutexClient{locks: map[string]*sync.Mutex{}}, nil
}

func (mutexBackend) Close() error { return nil }

type mutexClient struct {
	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

func (c *mutexClient) lock(key string) *sync.Mutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.locks[key]
	if !ok {
		l = &sync.Mutex{}
		c.locks[key] = l
	}
	return l
}

func (c *mutexClient) Acquire(ctx context.Context, key string) (Grant, error) {
	if !c.lock(key).TryLock() {
		return Grant{}, ErrBusy
	}
	return Grant{}, nil
}

func (c *mutexClient) Release(ctx context.Context, key string, g Grant) error {
	l := c.lock(key)
	if l.TryLock() { // it was not locked: nothing to release
		l.Unlock()
		return ErrNotHeld
	}
	l.Unlock()
	return nil
}

func (c *mutexClient) Close() error { return nil }
