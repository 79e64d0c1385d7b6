package clientprotocol

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/locktorture/locktorture/internal/owner"
)

// ownerEnv is the environment variable every client process (and so,
// unless it clears its environment, everything it starts) carries: the
// harness that owns it ("pid starttime", owner.ID) and the
// launcher's number in it, "pid starttime/N". A process that left the
// client's process group (setsid) is still found by it: at Close, as a
// process the client left behind, and by any later run once the harness
// that owns it is gone (ReapOrphans).
const ownerEnv = "LOCKTORTURE_CLIENT_OF"

// launchers numbers the launchers of this harness, for their ownerEnv tags.
var launchers atomic.Int64

// Leftover is a process a client started and left running.
type Leftover struct {
	PID int
	// Cmd is its command line, as ps shows it.
	Cmd string
}

// String is "process 123 (sleep 3600)".
func (p Leftover) String() string { return fmt.Sprintf("process %d (%s)", p.PID, p.Cmd) }

// procsTagged lists the live processes (not zombies) whose ownerEnv
// matches: the tag itself, when exact, or any tag whose owner match says.
func procsTagged(match func(tag string) bool) []Leftover {
	var out []Leftover
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	self := os.Getpid()
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil {
			continue
		}
		tag, ok := envValue(env, ownerEnv)
		if !ok || !match(tag) || zombie(d) {
			continue
		}
		out = append(out, Leftover{PID: pid, Cmd: cmdline(d)})
	}
	return out
}

// envValue finds name's value in a NUL-separated environment.
func envValue(env []byte, name string) (string, bool) {
	prefix := []byte(name + "=")
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			return string(v), true
		}
	}
	return "", false
}

// zombie reports whether the process at /proc/<pid> has exited (state Z or X).
func zombie(procDir string) bool {
	b, err := os.ReadFile(filepath.Join(procDir, "stat"))
	if err != nil {
		return true
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) == 0 || f[0] == "Z" || f[0] == "X"
}

// cmdline is a process's command line with spaces between its arguments.
func cmdline(procDir string) string {
	b, _ := os.ReadFile(filepath.Join(procDir, "cmdline"))
	s := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// killAll continues then kills each process (a stopped one too), and waits
// a little until they are gone.
func killAll(ps []Leftover) {
	for _, p := range ps {
		continueAndKill(p.PID)
	}
	deadline := time.Now().Add(2 * time.Second)
	for _, p := range ps {
		for time.Now().Before(deadline) && !zombie(fmt.Sprintf("/proc/%d", p.PID)) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// continueAndKill sends SIGCONT, so that nothing is left stopped, then
// SIGKILL to pid (a process group when negative, as kill(2) takes it).
func continueAndKill(pid int) {
	_ = syscall.Kill(pid, syscall.SIGCONT)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// ReapOrphans kills the processes that clients of harnesses now gone left
// running (kill -9 of a harness ends its client processes, Pdeathsig, but
// not what they started) and returns them. Any run calls it first, so the
// next run on the machine ends them, whatever its mode. Best effort.
func ReapOrphans() []Leftover {
	ps := procsTagged(func(tag string) bool {
		id, _, _ := strings.Cut(tag, "/")
		return !owner.Alive(id)
	})
	killAll(ps)
	return ps
}

// MkdirOwned makes a new temporary directory in the system's, named
// pattern as os.MkdirTemp names it, that names this process its owner
// (owner.Mark): should the process be killed with SIGKILL, the next run on
// the machine removes it once the process is gone (owner.Reap; pattern
// must begin with owner.TempPattern, "locktorture-"). The caller removes it.
func MkdirOwned(pattern string) (string, error) {
	d, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	if err := owner.Mark(d); err != nil {
		os.RemoveAll(d)
		return "", err
	}
	return d, nil
}
