package clientfault

import (
	"context"
	"errors"
	"testing"
)

func TestGate(t *testing.T) {
	g := NewGate()
	if g.Paused() || g.Wait(context.Background()) != nil {
		t.Fatal("new gate is not open")
	}
	if !g.Pause() || g.Pause() {
		t.Fatal("Pause should report only the first close")
	}
	released := make(chan struct{}, 3)
	for range 3 {
		go func() {
			if g.Wait(context.Background()) == nil {
				released <- struct{}{}
			}
		}()
	}
	select {
	case <-released:
		t.Fatal("a waiter passed a closed gate")
	default:
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait on a cancelled context: %v", err)
	}
	if !g.Resume() || g.Resume() {
		t.Fatal("Resume should report only the first open")
	}
	for range 3 {
		<-released
	}
}
