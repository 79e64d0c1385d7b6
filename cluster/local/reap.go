package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// OwnerFile, in a cluster's temporary directory, names the harness process
// that owns it: "pid starttime" (the start time from /proc tells a reused
// pid from the owner).
const OwnerFile = ".locktorture-owner"

// TempPattern is the name pattern of every cluster's temporary directory.
const TempPattern = "locktorture-"

// MarkOwned names this process the owner of dir, a directory named
// locktorture-* in the system's (or a run's) temporary directory: should
// this process die without removing it, the next run on the machine does
// (Reap; cluster.SweepLeftovers).
func MarkOwned(dir string) error {
	id, err := procIdentity(os.Getpid())
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, OwnerFile), []byte(id+"\n"), 0o644); err != nil {
		return fmt.Errorf("cluster: owner file: %w", err)
	}
	return nil
}

// Reap removes the temporary directories that earlier harnesses left
// in parent when they died without cleaning up (kill -9 cannot be caught;
// their servers die with them, their data directories do not): every
// locktorture-* directory but keep whose owner process is gone. A directory
// without an owner file, or whose owner still runs, is left alone. It is
// best effort.
func Reap(parent, keep string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		dir := filepath.Join(parent, e.Name())
		if !e.IsDir() || !strings.HasPrefix(e.Name(), TempPattern) || dir == keep {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, OwnerFile))
		if err != nil {
			continue
		}
		if OwnerAlive(strings.TrimSpace(string(b))) {
			continue
		}
		killLeftovers(dir)
		removeSharedMemory(dir)
		_ = os.RemoveAll(dir)
	}
}

// killLeftovers ends the processes a dead harness's servers left running
// from dir: those whose working directory is in it (PostgreSQL's backends
// run in its data directory) or whose command line names it. Pdeathsig
// kills a server when its harness dies, but not the server's own children
// — and a child stopped by a server-pause (SIGSTOP) would wait forever.
// SIGKILL ends a stopped process too. It waits (a little) until they are
// gone, so that what they held (shared memory) is free. Best effort.
func killLeftovers(dir string) {
	var killed []procRef
	defer func() { waitGone(killed, 2*time.Second) }()
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil || pid == os.Getpid() {
			continue
		}
		if !usesDir(p, dir) {
			continue
		}
		if st, ok := procStat(pid); ok && syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed = append(killed, procRef{pid, st.start})
		}
	}
}

// removeSharedMemory removes the SysV shared memory segments that killed
// PostgreSQL servers under dir left behind: each data directory's
// postmaster.pid names its segment (line 7: "key shmid"). A segment is
// removed only when no process is attached to it any more. Best effort.
func removeSharedMemory(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && strings.Count(strings.TrimPrefix(p, dir), "/") > 3 {
			return filepath.SkipDir
		}
		if d.Name() != "postmaster.pid" || d.IsDir() {
			return nil
		}
		if id, ok := postmasterShmid(p); ok {
			var ds unix.SysvShmDesc
			if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &ds); err == nil && ds.Nattch == 0 {
				_, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
			}
		}
		return nil
	})
}

// postmasterShmid reads the shared memory id from a postmaster.pid file.
func postmasterShmid(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 7 {
		return 0, false
	}
	f := strings.Fields(lines[6])
	if len(f) != 2 {
		return 0, false
	}
	id, err := strconv.Atoi(f[1])
	return id, err == nil && id >= 0
}

// usesDir reports whether the process at /proc/<pid> (procDir) works in dir
// or names it on its command line.
func usesDir(procDir, dir string) bool {
	if cwd, err := os.Readlink(filepath.Join(procDir, "cwd")); err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+"/")) {
		return true
	}
	cmd, err := os.ReadFile(filepath.Join(procDir, "cmdline"))
	return err == nil && strings.Contains(string(cmd), dir)
}

// OwnerAlive reports whether the process an owner file names still runs.
// An unreadable owner file counts as alive, so nothing is removed on a guess.
func OwnerAlive(owner string) bool {
	pidText, _, ok := strings.Cut(owner, " ")
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || pid <= 0 {
		return true
	}
	id, err := procIdentity(pid)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	return err != nil || id == owner
}

// procIdentity returns "pid starttime" for a running process, from
// /proc/<pid>/stat; an error wrapping os.ErrNotExist when it is gone.
func procIdentity(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", fmt.Errorf("cluster: process %d: %w", pid, err)
	}
	// The command name, in parentheses, may hold spaces: fields after it
	// start at the last ')'. starttime is field 22 of stat, the 20th after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", fmt.Errorf("cluster: process %d: unreadable stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return "", fmt.Errorf("cluster: process %d: short stat", pid)
	}
	return fmt.Sprintf("%d %s", pid, f[19]), nil
}

// OwnerID names this process the way owner files and container labels do
// ("pid starttime"): a reused pid is never taken for it.
func OwnerID() (string, error) { return procIdentity(os.Getpid()) }
