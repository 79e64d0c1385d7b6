package workload_test

import (
	"context"
	"testing"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/workload"
)

// countingBackend counts the clients made and closed.
type countingBackend struct {
	backends.Backend
	made, closed int
}

func (b *countingBackend) Client(ctx context.Context, c backends.ClientEnv) (backends.Client, error) {
	cl, err := b.Backend.Client(ctx, c)
	if err != nil {
		return nil, err
	}
	b.made++
	return &countingClient{Client: cl, b: b}, nil
}

type countingClient struct {
	backends.Client
	b *countingBackend
}

func (c *countingClient) Close() error {
	c.b.closed++
	return c.Client.Close()
}

// TestOpenBeforeRun: the clients Open made are the ones Run uses (none
// made twice) and Run closes them; Close closes clients no Run took.
func TestOpenBeforeRun(t *testing.T) {
	b := &countingBackend{Backend: mutexBackend(t)}
	rec := history.NewRecorder(nil, history.RecorderOptions{Keep: true})
	defer rec.Close()
	procs := workload.NewProcs(3, rec)
	if err := procs.Open(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if b.made != 3 || b.closed != 0 {
		t.Fatalf("Open made %d clients and closed %d, want 3 and 0", b.made, b.closed)
	}
	res, _ := workload.NewMemory(workload.FenceNone)
	stop := make(chan struct{})
	time.AfterFunc(20*time.Millisecond, func() { close(stop) })
	if err := workload.Run(context.Background(), stop, cfg(3), b, res, procs); err != nil {
		t.Fatal(err)
	}
	if b.made != 3 || b.closed != 3 {
		t.Fatalf("after Run: %d clients made, %d closed, want 3 and 3", b.made, b.closed)
	}
	if len(rec.History()) == 0 {
		t.Fatal("Run recorded nothing")
	}
	procs.Close()
	if b.closed != 3 {
		t.Fatalf("Close after Run closed %d clients, want none more", b.closed-3)
	}
	// Opened and never run: Close closes them.
	procs = workload.NewProcs(2, rec)
	if err := procs.Open(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	procs.Close()
	if b.made != 5 || b.closed != 5 {
		t.Fatalf("Open then Close: %d made, %d closed, want 5 and 5", b.made, b.closed)
	}
}
