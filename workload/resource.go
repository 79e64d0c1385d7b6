// Package workload holds the protected resources and the client loop: each
// simulated process acquires a lock, reads the resource, works, writes the
// value plus one and releases, recording every step in the history.
package workload

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/postgres"
)

// Fencing modes of a resource.
const (
	// FenceNone accepts every read and write.
	FenceNone = "none"
	// FenceWrites rejects a write whose fence is below the highest seen.
	FenceWrites = "writes"
	// FenceAll makes reads and writes both record and check the highest
	// fence, as Kleppmann describes the storage service.
	FenceAll = "all"
)

// FencingModes lists the valid fencing modes.
var FencingModes = []string{FenceNone, FenceWrites, FenceAll}

// Resource names.
const (
	// ResourceMemory is a value inside the harness standing for an external
	// side effect.
	ResourceMemory = "memory"
)

// ResourceEnv is what a resource gets to build itself.
type ResourceEnv struct {
	// Cluster starts (or shares) the servers the resource needs.
	Cluster *cluster.Cluster
	// Fencing is the fencing mode.
	Fencing string
	// Keys are the keys the clients use.
	Keys []string
	// Backend is the name of the lock backend in use.
	Backend string
	// Postgres are the PostgreSQL server's settings, if the resource
	// starts it (postgres.RunOptions of the run's).
	Postgres postgres.Options
}

// resourceFactory builds a resource for a run.
type resourceFactory func(ctx context.Context, env ResourceEnv) (Resource, error)

var (
	resMu     sync.Mutex
	resources = map[string]resourceFactory{}
)

// registerResource adds a resource kind; it panics on a duplicate name.
func registerResource(name string, f resourceFactory) {
	resMu.Lock()
	defer resMu.Unlock()
	if _, dup := resources[name]; dup {
		panic("workload: duplicate resource " + name)
	}
	resources[name] = f
}

// ResourceNames lists the registered resources, sorted.
func ResourceNames() []string {
	resMu.Lock()
	defer resMu.Unlock()
	out := make([]string, 0, len(resources))
	for n := range resources {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// NewResource builds the named resource, checking the fencing mode first.
func NewResource(ctx context.Context, name string, env ResourceEnv) (Resource, error) {
	if err := ValidFencing(env.Fencing); err != nil {
		return nil, err
	}
	resMu.Lock()
	f, ok := resources[name]
	resMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("unknown resource %q (known: %s)", name, strings.Join(ResourceNames(), ", "))
	}
	return f(ctx, env)
}

func init() {
	registerResource(ResourceMemory, func(ctx context.Context, env ResourceEnv) (Resource, error) {
		return NewMemory(env.Fencing)
	})
}

// ErrStale is wrapped when a fenced resource rejects a read or write: it is
// a certain failure and the history's error says "stale".
var ErrStale = errors.New("stale fence")

// Resource is what the lock protects: one integer per key. Reads and
// writes carry the holder's grant: its fence (nil if none) and, for
// resources that act inside the lock's own session, its Conn.
type Resource interface {
	// Read returns key's value.
	Read(ctx context.Context, key string, g backends.Grant) (int64, error)
	// Write sets key's value. A fenced resource may refuse with ErrStale.
	Write(ctx context.Context, key string, v int64, g backends.Grant) error
	// FinalRead reads key after the run, bypassing fences.
	FinalRead(ctx context.Context, key string) (int64, error)
	// Close releases the resource.
	Close() error
}

// txResource is a resource that can act inside the lock's own transaction
// (the grant's Conn): its writes then take effect only when the release
// commits, and are recorded with history's Tx mark.
type txResource interface {
	InTx(g backends.Grant) bool
}

// Memory is the in-harness resource.
type Memory struct {
	mode    string
	mu      sync.Mutex
	vals    map[string]int64
	highest map[string]int64
}

// NewMemory returns an in-memory resource with the given fencing mode.
func NewMemory(mode string) (*Memory, error) {
	if err := ValidFencing(mode); err != nil {
		return nil, err
	}
	return &Memory{mode: mode, vals: map[string]int64{}, highest: map[string]int64{}}, nil
}

// ValidFencing checks a fencing mode name.
func ValidFencing(mode string) error {
	for _, m := range FencingModes {
		if m == mode {
			return nil
		}
	}
	return fmt.Errorf("unknown fencing mode %q (known: none, writes, all)", mode)
}

// check applies the fence rule for one access and records the fence.
func (m *Memory) check(key string, fence *int64) error {
	if fence == nil {
		return nil
	}
	if hi, ok := m.highest[key]; ok && *fence < hi {
		return fmt.Errorf("%w %d < %d", ErrStale, *fence, hi)
	}
	m.highest[key] = *fence
	return nil
}

// Read implements Resource.
func (m *Memory) Read(ctx context.Context, key string, g backends.Grant) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mode == FenceAll {
		if err := m.check(key, g.Fence); err != nil {
			return 0, err
		}
	}
	return m.vals[key], nil
}

// Write implements Resource.
func (m *Memory) Write(ctx context.Context, key string, v int64, g backends.Grant) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mode != FenceNone {
		if err := m.check(key, g.Fence); err != nil {
			return err
		}
	}
	m.vals[key] = v
	return nil
}

// FinalRead implements Resource.
func (m *Memory) FinalRead(ctx context.Context, key string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.vals[key], nil
}

// Close implements Resource.
func (m *Memory) Close() error { return nil }
