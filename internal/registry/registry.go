// Package registry is the one shape of locktorture's registries: backends
// and faults each register themselves by name from their own file's init,
// and the harness looks them up by the names users type.
package registry

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Registry maps names to values of one kind. It is safe for concurrent use.
type Registry[T any] struct {
	unknown error // wrapped when a name is not registered
	mu      sync.Mutex
	m       map[string]T
}

// New returns an empty registry whose lookups of an unknown name return an
// error wrapping unknown (such as backends.ErrUnknown).
func New[T any](unknown error) *Registry[T] {
	return &Registry[T]{unknown: unknown, m: map[string]T{}}
}

// Add registers v under name. A name registered twice is a programming
// error: Add panics.
func (r *Registry[T]) Add(name string, v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[name]; dup {
		panic(fmt.Sprintf("registry: %v: %q registered twice", r.unknown, name))
	}
	r.m[name] = v
}

// Remove removes name's entry, when it has one: for an entry that lives
// only as long as one command (a program row given on the command line).
func (r *Registry[T]) Remove(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, name)
}

// Get returns the value registered under name, or an error wrapping the
// registry's unknown error that lists the known names.
func (r *Registry[T]) Get(name string) (T, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[name]
	if !ok {
		return v, fmt.Errorf("%w %q (known: %s)", r.unknown, name, strings.Join(r.namesLocked(), ", "))
	}
	return v, nil
}

// Names returns every registered name, sorted.
func (r *Registry[T]) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.namesLocked()
}

// All returns every registered value, sorted by name.
func (r *Registry[T]) All() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]T, 0, len(r.m))
	for _, n := range r.namesLocked() {
		out = append(out, r.m[n])
	}
	return out
}

func (r *Registry[T]) namesLocked() []string {
	ns := make([]string, 0, len(r.m))
	for n := range r.m {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}
