// Package workload holds the protected resources and the client loop: each
// simulated process acquires a lock, reads the resource, works, writes the
// value plus one and releases, recording every step in the history.
package workload

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// Resources lists the resource names this build knows.
var Resources = []string{ResourceMemory}

// ErrStale is wrapped when a fenced resource rejects a read or write: it is
// a certain failure and the history's error says "stale".
var ErrStale = errors.New("stale fence")

// Resource is what the lock protects: one integer per key.
type Resource interface {
	// Read returns key's value. fence is the reader's token (nil if none).
	Read(ctx context.Context, key string, fence *int64) (int64, error)
	// Write sets key's value. A fenced resource may refuse with ErrStale.
	Write(ctx context.Context, key string, v int64, fence *int64) error
	// FinalRead reads key after the run, bypassing fences.
	FinalRead(ctx context.Context, key string) (int64, error)
	// Close releases the resource.
	Close() error
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
func (m *Memory) Read(ctx context.Context, key string, fence *int64) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mode == FenceAll {
		if err := m.check(key, fence); err != nil {
			return 0, err
		}
	}
	return m.vals[key], nil
}

// Write implements Resource.
func (m *Memory) Write(ctx context.Context, key string, v int64, fence *int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mode != FenceNone {
		if err := m.check(key, fence); err != nil {
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
