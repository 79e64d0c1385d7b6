package history

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestMakeOps: the room MakeOps makes is empty, of the size asked for, and
// filled with few page faults where Linux gives huge pages on request:
// 100,000 fresh ops took some 3,300 faults of 4 KB pages.
func TestMakeOps(t *testing.T) {
	for _, n := range []int{0, 1, 100_000} {
		ops := MakeOps(n)
		if len(ops) != 0 || cap(ops) != n {
			t.Fatalf("MakeOps(%d): len %d, cap %d", n, len(ops), cap(ops))
		}
	}
	thp, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !strings.Contains(string(thp), "[madvise]") && !strings.Contains(string(thp), "[always]") {
		t.Skipf("no transparent huge pages on request here (%q, %v)", thp, err)
	}
	const n = 100_000
	runtime.LockOSThread() // the faults are counted for this thread
	defer runtime.UnlockOSThread()
	var before, after syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &before); err != nil {
		t.Skip(err)
	}
	ops := MakeOps(n)
	op := Op{Type: Invoke, F: Acquire, Key: "k"}
	for i := range n {
		op.Index = int64(i)
		ops = append(ops, op)
	}
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &after); err != nil {
		t.Skip(err)
	}
	if faults := after.Minflt - before.Minflt; faults > 1000 {
		t.Errorf("filling %d ops took %d page faults", n, faults)
	}
}
