// Package owner says which harness process owns what a run leaves on the
// machine, and removes what a harness killed with SIGKILL left behind.
//
// A process is named "pid starttime" (ID; the start time from /proc tells
// a reused pid from the owner). A run's temporary directories carry it in
// an owner file (Mark), its containers in a label, its client processes in
// their environment; the next run on the machine removes what belongs to
// an owner that is gone (Reap for directories; cluster/docker and
// clientprotocol for the others, with Alive).
package owner

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

// File, in a cluster's temporary directory, names the harness process that
// owns it: "pid starttime".
const File = ".locktorture-owner"

// TempPattern is the name pattern of every cluster's temporary directory.
const TempPattern = "locktorture-"

// ID names this process the way owner files and container labels do
// ("pid starttime"): a reused pid is never taken for it.
func ID() (string, error) { return identity(os.Getpid()) }

// identity returns "pid starttime" for a running process; an error
// wrapping os.ErrNotExist when it is gone.
func identity(pid int) (string, error) {
	st, err := readStat(pid)
	if err != nil {
		return "", err
	}
	return Ref{PID: pid, Start: st.Start}.String(), nil
}

// Mark names this process the owner of dir, a directory named
// locktorture-* in the system's (or a run's) temporary directory: should
// this process die without removing it, the next run on the machine does
// (Reap; cluster.SweepLeftovers).
func Mark(dir string) error {
	id, err := ID()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, File), []byte(id+"\n"), 0o644); err != nil {
		return fmt.Errorf("owner: owner file: %w", err)
	}
	return nil
}

// Alive reports whether the process an owner ID names still runs. An
// unreadable ID counts as alive, so nothing is removed on a guess.
func Alive(owner string) bool {
	pidText, _, ok := strings.Cut(owner, " ")
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || pid <= 0 {
		return true
	}
	id, err := identity(pid)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	return err != nil || id == owner
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
		b, err := os.ReadFile(filepath.Join(dir, File))
		if err != nil {
			continue
		}
		if Alive(strings.TrimSpace(string(b))) {
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
	var killed []Ref
	defer func() { WaitGone(killed, 2*time.Second) }()
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil || pid == os.Getpid() {
			continue
		}
		if !usesDir(p, dir) {
			continue
		}
		if st, ok := Stat(pid); ok && syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed = append(killed, Ref{pid, st.Start})
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
