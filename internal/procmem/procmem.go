// Package procmem reads how much memory this process holds, for progress
// lines and soak reports.
package procmem

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
)

// RSS returns the process's resident set size in bytes: VmRSS of
// /proc/self/status on Linux; elsewhere what the Go runtime holds from the
// system, which is close.
func RSS() int64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range bytes.Lines(b) {
			if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
				f := bytes.Fields(rest)
				if len(f) >= 1 {
					if kb, err := strconv.ParseInt(string(f[0]), 10, 64); err == nil {
						return kb << 10
					}
				}
			}
		}
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.Sys)
}
