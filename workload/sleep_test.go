package workload

import (
	"context"
	"testing"
	"time"

	"github.com/locktorture/locktorture/clientfault"
)

// TestSleepAsGateSleep checks that the loop's sleep keeps Gate.Sleep's
// promises on both sides of spinBelow: it waits at least d, then waits at
// the gate while the process is paused, and gives up when ctx ends.
func TestSleepAsGateSleep(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 500, spinBelow - 1, spinBelow, 2 * time.Millisecond} {
		l := &loop{gate: clientfault.NewGate()}
		start := time.Now()
		if err := l.sleep(context.Background(), d); err != nil {
			t.Fatalf("sleep(%v): %v", d, err)
		}
		if got := time.Since(start); got < d {
			t.Errorf("sleep(%v) returned after %v", d, got)
		}

		// Paused: sleep must not return until the gate opens.
		l.gate.Pause()
		done := make(chan error, 1)
		go func() { done <- l.sleep(context.Background(), d) }()
		select {
		case err := <-done:
			t.Fatalf("sleep(%v) returned %v through a closed gate", d, err)
		case <-time.After(d + 20*time.Millisecond):
		}
		l.gate.Resume()
		if err := <-done; err != nil {
			t.Fatalf("sleep(%v) after resume: %v", d, err)
		}

		// Paused and ctx ending: sleep returns ctx's error, as Gate.Sleep does.
		l.gate.Pause()
		ctx, cancel := context.WithCancel(context.Background())
		go func() { done <- l.sleep(ctx, d) }()
		cancel()
		ref := clientfault.NewGate()
		ref.Pause()
		if err, want := <-done, ref.Sleep(ctx, d); err != want {
			t.Errorf("sleep(%v) with ctx ended: %v, Gate.Sleep gives %v", d, err, want)
		}
	}
}
