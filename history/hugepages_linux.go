package history

import (
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page.
const hugePage = 2 << 20

// adviseHugePages asks Linux to back the whole huge pages inside ops's
// memory with huge pages (where transparent huge pages are enabled on
// request, as by default). Filling a million fresh ops (130 MB) then takes
// some sixty page faults, not 32,000: those faults were a third of the
// time a large history took to read. It changes nothing else, and a kernel
// that declines is no error.
func adviseHugePages(ops []Op) {
	if len(ops) == 0 {
		return
	}
	base := unsafe.Pointer(&ops[0])
	start := uintptr(base)
	end := start + uintptr(len(ops))*unsafe.Sizeof(ops[0])
	from := (start + hugePage - 1) &^ (hugePage - 1)
	to := end &^ (hugePage - 1)
	if to <= from {
		return
	}
	page := (*byte)(unsafe.Add(base, from-start))
	_ = syscall.Madvise(unsafe.Slice(page, to-from), syscall.MADV_HUGEPAGE)
}
