// Package clientfault is what a simulated client process has of its own:
// the pause gate a nemesis closes to freeze it (as a stop-the-world GC
// pause would) and the clock a nemesis jumps or makes drift. Lock code
// waits at the gate and reads the clock; in-process clients and client
// processes (clientprotocol) alike.
package clientfault

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Gate freezes a simulated client process the way a stop-the-world GC pause
// freezes a real one: every goroutine the client owns calls Wait before each
// step, and while the gate is closed they all stop there, to resume together
// when it opens. Bytes already on the wire still arrive; the client just
// does not act on them until it wakes.
type Gate struct {
	mu     sync.Mutex
	paused bool
	// open is closed while not paused; it is changed under mu and read
	// without it: Wait, which every step of every client calls, takes no
	// lock.
	open atomic.Pointer[chan struct{}]
	// notify, when set, hears every change, under mu (OnChange).
	notify func(paused bool)
}

// OnChange makes f hear every pause and resume of the gate, as it happens
// and in order (f runs under the gate's lock: it must be quick). A client
// running as a process of its own freezes the whole process with it.
func (g *Gate) OnChange(f func(paused bool)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.notify = f
}

// NewGate returns an open gate.
func NewGate() *Gate {
	ch := make(chan struct{})
	close(ch)
	g := &Gate{}
	g.open.Store(&ch)
	return g
}

// Pause closes the gate. It reports false if it was already closed.
func (g *Gate) Pause() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused {
		return false
	}
	g.paused = true
	ch := make(chan struct{})
	g.open.Store(&ch)
	if g.notify != nil {
		g.notify(true)
	}
	return true
}

// Resume opens the gate, releasing every waiter at once. It reports false
// if the gate was already open.
func (g *Gate) Resume() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.paused {
		return false
	}
	g.paused = false
	// The client's own step goes first, then its process (SIGCONT): a
	// woken program's next instruction runs before its library's threads
	// can tell it what it missed, as after a real stop-the-world pause.
	close(*g.open.Load())
	if g.notify != nil {
		g.notify(false)
	}
	return true
}

// Paused reports whether the gate is closed.
func (g *Gate) Paused() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.paused
}

// Wait returns at once when the gate is open, or blocks until it opens or
// ctx ends (returning ctx's error).
func (g *Gate) Wait(ctx context.Context) error {
	ch := *g.open.Load()
	select {
	case <-ch:
		return nil
	default:
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Sleep waits d (or until ctx ends), then waits for the gate: a client that
// was paused mid-sleep wakes only when the pause is over.
func (g *Gate) Sleep(ctx context.Context, d time.Duration) error {
	if d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	return g.Wait(ctx)
}
