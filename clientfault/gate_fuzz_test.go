package clientfault

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// plainGate is Gate as it was before Wait stopped taking the lock: the
// open channel read under the mutex. FuzzGateMatchesPlain holds Gate to it.
type plainGate struct {
	mu     sync.Mutex
	paused bool
	open   chan struct{}
}

func newPlainGate() *plainGate {
	ch := make(chan struct{})
	close(ch)
	return &plainGate{open: ch}
}

func (g *plainGate) Pause() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused {
		return false
	}
	g.paused = true
	g.open = make(chan struct{})
	return true
}

func (g *plainGate) Resume() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.paused {
		return false
	}
	g.paused = false
	close(g.open)
	return true
}

func (g *plainGate) Paused() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.paused
}

func (g *plainGate) Wait(ctx context.Context) error {
	g.mu.Lock()
	ch := g.open
	g.mu.Unlock()
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

// FuzzGateMatchesPlain drives a Gate and a plainGate through the same
// calls, one per byte — Pause, Resume, Paused, Wait with a context
// already ended (it answers at once: open or not), and a Wait with a live
// context on a goroutine of its own, which must pass once the gate opens
// — and holds them to the same answers; a waiter still waiting at the
// end is let go by a last Resume, on both.
func FuzzGateMatchesPlain(f *testing.F) {
	for _, seed := range []string{"", "\x00\x03\x01\x03", "\x00\x00\x04\x01\x01", "\x04\x00\x04\x04\x02\x01\x03"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, steps []byte) {
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		g, q := NewGate(), newPlainGate()
		var waiters sync.WaitGroup
		for i, c := range steps {
			var got, want string
			switch c % 5 {
			case 0:
				got, want = fmt.Sprint(g.Pause()), fmt.Sprint(q.Pause())
			case 1:
				got, want = fmt.Sprint(g.Resume()), fmt.Sprint(q.Resume())
			case 2:
				got, want = fmt.Sprint(g.Paused()), fmt.Sprint(q.Paused())
			case 3:
				got, want = fmt.Sprint(g.Wait(ended)), fmt.Sprint(q.Wait(ended))
			case 4:
				waiters.Go(func() {
					if err := g.Wait(context.Background()); err != nil {
						t.Errorf("a waiter: %v", err)
					}
				})
				waiters.Go(func() {
					if err := q.Wait(context.Background()); err != nil {
						t.Errorf("a plain waiter: %v", err)
					}
				})
			}
			if got != want {
				t.Fatalf("step %d (%d): got %s, plain %s", i, c%5, got, want)
			}
		}
		g.Resume()
		q.Resume()
		waiters.Wait()
	})
}
