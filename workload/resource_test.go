package workload_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/workload"
)

func f(v int64) *int64 { return &v }

// access is one step against a Memory resource.
type access struct {
	op    string // "r", "w" or "final"
	key   string // "" = k0
	fence *int64
	v     int64 // value written, or value a read must return
	stale bool  // the access must be rejected as stale
}

func TestMemoryFencing(t *testing.T) {
	tests := []struct {
		name  string
		mode  string
		steps []access
	}{
		{"none accepts everything", workload.FenceNone, []access{
			{op: "w", fence: f(10), v: 1},
			{op: "w", fence: f(3), v: 2},
			{op: "r", fence: f(1), v: 2},
			{op: "w", v: 3},
			{op: "r", v: 3},
		}},
		{"writes rejects a lower write", workload.FenceWrites, []access{
			{op: "w", fence: f(10), v: 1},
			{op: "w", fence: f(9), v: 2, stale: true},
			{op: "r", v: 1},               // the rejected write changed nothing
			{op: "w", fence: f(10), v: 3}, // equal is accepted
			{op: "w", fence: f(11), v: 4}, // higher is accepted, and raises the bar
			{op: "w", fence: f(10), v: 5, stale: true},
			{op: "r", fence: f(1), v: 4}, // reads are not fenced
			{op: "r", v: 4},
		}},
		{"writes: a read does not raise the bar", workload.FenceWrites, []access{
			{op: "w", fence: f(5), v: 1},
			{op: "r", fence: f(100), v: 1},
			{op: "w", fence: f(6), v: 2}, // would be stale had the read counted
		}},
		{"writes: unfenced access is accepted", workload.FenceWrites, []access{
			{op: "w", fence: f(10), v: 1},
			{op: "w", v: 2},
			{op: "r", v: 2},
			{op: "w", fence: f(9), v: 3, stale: true}, // the unfenced write did not lower the bar
		}},
		{"writes: keys are independent", workload.FenceWrites, []access{
			{op: "w", key: "k0", fence: f(10), v: 1},
			{op: "w", key: "k1", fence: f(1), v: 7},
			{op: "r", key: "k1", v: 7},
			{op: "w", key: "k0", fence: f(1), v: 2, stale: true},
		}},
		{"all rejects a lower read", workload.FenceAll, []access{
			{op: "w", fence: f(10), v: 1},
			{op: "r", fence: f(9), stale: true},
			{op: "r", fence: f(10), v: 1},
		}},
		{"all: a higher read raises the bar for writes", workload.FenceAll, []access{
			{op: "w", fence: f(33), v: 1},
			{op: "r", fence: f(34), v: 1},              // client 1 reads with the newer token
			{op: "w", fence: f(33), v: 2, stale: true}, // client 0's stale write is refused
			{op: "w", fence: f(34), v: 2},
			{op: "r", v: 2},
		}},
		{"all: unfenced access is accepted", workload.FenceAll, []access{
			{op: "r", fence: f(5), v: 0},
			{op: "r", v: 0},
			{op: "w", v: 1},
			{op: "r", fence: f(4), stale: true},
		}},
		{"final read bypasses fences", workload.FenceAll, []access{
			{op: "w", fence: f(10), v: 9},
			{op: "final", v: 9},
			{op: "w", fence: f(10), v: 10}, // the final read left no mark
		}},
		{"final read of an unwritten key", workload.FenceNone, []access{
			{op: "final", key: "never", v: 0},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := workload.NewMemory(tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			ctx := context.Background()
			for i, a := range tc.steps {
				key := a.key
				if key == "" {
					key = "k0"
				}
				var got int64
				var err error
				switch a.op {
				case "r":
					got, err = m.Read(ctx, key, backends.Grant{Fence: a.fence})
				case "w":
					err = m.Write(ctx, key, a.v, backends.Grant{Fence: a.fence})
				case "final":
					got, err = m.FinalRead(ctx, key)
				}
				desc := fmt.Sprintf("step %d (%s %s fence %v)", i, a.op, key, fmtFence(a.fence))
				if a.stale {
					if !errors.Is(err, workload.ErrStale) || !strings.Contains(err.Error(), "stale") {
						t.Fatalf("%s: got %v, want a stale rejection", desc, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", desc, err)
				}
				if a.op != "w" && got != a.v {
					t.Fatalf("%s: read %d, want %d", desc, got, a.v)
				}
			}
		})
	}
}

func fmtFence(p *int64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func TestNewMemoryRejectsUnknownMode(t *testing.T) {
	for _, mode := range []string{"", "sometimes", "ALL"} {
		if m, err := workload.NewMemory(mode); err == nil || m != nil {
			t.Errorf("NewMemory(%q) = %v, %v", mode, m, err)
		}
	}
	for _, mode := range workload.FencingModes {
		if err := workload.ValidFencing(mode); err != nil {
			t.Errorf("ValidFencing(%q): %v", mode, err)
		}
	}
	if err := workload.ValidFencing("sometimes"); err == nil || !strings.Contains(err.Error(), "sometimes") {
		t.Errorf("ValidFencing(sometimes) = %v", err)
	}
}
