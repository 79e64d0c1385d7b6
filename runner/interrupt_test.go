package runner

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/locktorture/locktorture/scenarios"
)

// cancelOn is a run log that cancels the run as soon as a line containing
// marker is logged: an interrupt at that exact moment.
type cancelOn struct {
	mu     sync.Mutex
	marker []byte
	cancel context.CancelFunc
}

func (c *cancelOn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if bytes.Contains(b, c.marker) {
		c.cancel()
	}
	return len(b), nil
}

// TestInterruptIsNeverAVerdict: an interrupt late in a run — as the clients
// stop, during the final reads or while checking — is ErrInterrupted (exit
// 255), with no verdict, and store/latest is not moved to the half run.
func TestInterruptIsNeverAVerdict(t *testing.T) {
	for _, marker := range []string{"clients start", "clients stopped", "ops; checking"} {
		t.Run(marker, func(t *testing.T) {
			sc := builtin(t, "baseline", scenarios.Overrides{Backend: ptr("mutex"), Duration: ptr(300 * time.Millisecond)})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			store := t.TempDir()
			out, err := Run(ctx, sc, Options{Store: store, TempDir: t.TempDir(), Log: &cancelOn{marker: []byte(marker), cancel: cancel}})
			if !errors.Is(err, ErrInterrupted) {
				var v string
				if out != nil {
					v = out.Results.Valid.String()
				}
				t.Fatalf("interrupted at %q: got verdict %q, error %v; want ErrInterrupted", marker, v, err)
			}
			if _, err := os.Lstat(filepath.Join(store, "latest")); err == nil {
				t.Errorf("store/latest points at an interrupted run")
			}
		})
	}
}
