package history

import (
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// TestMakeOps: the room MakeOps makes is empty, of the size asked for, and
// Linux is asked to back it with huge pages (its mapping says "hg" in
// /proc/self/smaps). Filled, it takes few page faults where the kernel has
// huge pages to give: 100,000 fresh ops took some 3,300 faults of 4 KB
// pages, and take under 1,000 — unless the kernel declined (a busy
// machine's memory in pieces, or the room's edges, which are small pages,
// more than usual), which is said, not failed: the advice is what MakeOps
// does.
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
	if !advisedHuge(t, uintptr(unsafe.Pointer(&ops[0]))+hugePage) {
		t.Errorf("the room of %d ops is not advised huge pages (no hg in its mapping's VmFlags)", n)
	}
	if faults := after.Minflt - before.Minflt; faults > 1000 {
		t.Logf("filling %d ops took %d page faults: the kernel gave small pages for some", n, faults)
	}
}

// advisedHuge reports whether the mapping that holds addr has been advised
// MADV_HUGEPAGE ("hg" among its VmFlags in /proc/self/smaps).
func advisedHuge(t *testing.T, addr uintptr) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		if lo, hi, ok := mappingRange(line); ok {
			in = lo <= addr && addr < hi
			continue
		}
		if v, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			return slices.Contains(strings.Fields(v), "hg")
		}
	}
	t.Fatalf("no mapping of %#x in /proc/self/smaps", addr)
	return false
}

// mappingRange parses a mapping's first line in smaps ("7f..-7f.. rw-p
// ..."), the range it covers.
func mappingRange(line string) (lo, hi uintptr, ok bool) {
	f := strings.Fields(line)
	if len(f) < 2 || len(f[1]) != 4 {
		return 0, 0, false
	}
	a, b, found := strings.Cut(f[0], "-")
	if !found {
		return 0, 0, false
	}
	l, err1 := strconv.ParseUint(a, 16, 64)
	h, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uintptr(l), uintptr(h), true
}
