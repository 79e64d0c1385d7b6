package owner

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Ref names one process by pid and start time, so that a pid the system
// has since given to another process is not taken for it.
type Ref struct {
	PID   int
	Start string
}

// String is "pid starttime", the form of ID, owner files and container
// labels.
func (r Ref) String() string { return fmt.Sprintf("%d %s", r.PID, r.Start) }

// Gone reports whether the process has ended (absent, a zombie nobody
// reaped yet, or its pid now names another process).
func (r Ref) Gone() bool {
	st, ok := Stat(r.PID)
	return !ok || st.State == 'Z' || st.State == 'X' || st.Start != r.Start
}

// Status is what /proc/<pid>/stat says of a process.
type Status struct {
	// PPID is its parent's pid.
	PPID int
	// State is its state letter ('R', 'S', 'T' stopped, 'Z' a zombie...).
	State byte
	// Start is its start time, in clock ticks since boot.
	Start string
}

// Stat reads a process's parent, state and start time from
// /proc/<pid>/stat, and whether it could.
func Stat(pid int) (Status, bool) {
	st, err := readStat(pid)
	return st, err == nil
}

// readStat is Stat with the reason it failed: an error wrapping
// os.ErrNotExist when the process is gone.
func readStat(pid int) (Status, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Status{}, fmt.Errorf("owner: process %d: %w", pid, err)
	}
	// "pid (comm) S ppid ... starttime(22nd field) ...": comm may hold
	// spaces and parentheses, so the fields after it start at the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return Status{}, fmt.Errorf("owner: process %d: unreadable stat", pid)
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 20 {
		return Status{}, fmt.Errorf("owner: process %d: short stat", pid)
	}
	pp, err := strconv.Atoi(f[1])
	if err != nil {
		return Status{}, fmt.Errorf("owner: process %d: parent %q: %w", pid, f[1], err)
	}
	return Status{PPID: pp, State: f[0][0], Start: f[19]}, nil
}

// WaitGone waits until every process has ended, or d has passed; it
// reports whether all ended.
func WaitGone(ps []Ref, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		left := false
		for _, p := range ps {
			if !p.Gone() {
				left = true
				break
			}
		}
		if !left {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}
