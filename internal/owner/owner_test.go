package owner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestAlive: an owner ID is alive while its process runs with that start
// time; a gone process, or a reused pid, is not; an ID that cannot be read
// counts as alive (nothing is removed on a guess).
func TestAlive(t *testing.T) {
	self, err := ID()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, owner string
		alive       bool
	}{
		{"this process", self, true},
		{"gone", gone(t), false},
		{"reused pid", fmt.Sprintf("%d 1", os.Getpid()), false},
		{"no start time", fmt.Sprint(os.Getpid()), true},
		{"garbled", "not a pid", true},
		{"empty", "", true},
		{"pid 0", "0 1", true},
	} {
		if got := Alive(c.owner); got != c.alive {
			t.Errorf("%s: Alive(%q) = %v, want %v", c.name, c.owner, got, c.alive)
		}
	}
}

// TestMark: Mark writes this process's ID into dir's owner file.
func TestMark(t *testing.T) {
	dir := t.TempDir()
	if err := Mark(dir); err != nil {
		t.Fatal(err)
	}
	self, err := ID()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil || string(b) != self+"\n" {
		t.Errorf("owner file %q, %v; want %q", b, err, self+"\n")
	}
}

// TestStat: this process's status names its parent and a start time that
// ID agrees with, and a Ref of it is not Gone; a process that has exited is.
func TestStat(t *testing.T) {
	st, ok := Stat(os.Getpid())
	if !ok || st.PPID != os.Getppid() || st.Start == "" {
		t.Fatalf("Stat(self) = %+v, %v; want parent %d and a start time", st, ok, os.Getppid())
	}
	self, _ := ID()
	me := Ref{PID: os.Getpid(), Start: st.Start}
	if me.String() != self || me.Gone() {
		t.Errorf("Ref %q (gone %v); want %q, not gone", me, me.Gone(), self)
	}
	var r Ref
	if _, err := fmt.Sscan(gone(t), &r.PID, &r.Start); err != nil || !r.Gone() || !WaitGone([]Ref{r}, 0) {
		t.Errorf("an exited process %v is not gone (%v)", r, err)
	}
}

// TestReapKillsStoppedLeftovers: a process left stopped (SIGSTOP, as by a
// server-pause) in a dead harness's directory is ended by the next run's Reap,
// not left in state T forever.
func TestReapKillsStoppedLeftovers(t *testing.T) {
	parent := t.TempDir()
	dir := orphan(t, parent, "locktorture-killed")
	left := exec.Command("sleep", "600")
	left.Dir = dir
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- left.Wait() }()
	if err := left.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	Reap(parent, "")
	select {
	case <-exited:
	case <-time.After(time.Minute): // only against a hang: SIGKILL is at once
		_ = left.Process.Kill()
		t.Fatal("the stopped leftover still runs")
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("the dead harness's directory is still there")
	}
}

// TestReapRemovesSharedMemory: the segment a killed PostgreSQL left (named
// by its postmaster.pid) goes with its dead harness's directory; a segment
// a live process is attached to stays.
func TestReapRemovesSharedMemory(t *testing.T) {
	parent := t.TempDir()
	dead := orphan(t, parent, "locktorture-dead")
	data := filepath.Join(dead, "postgres-0", "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	left, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
	if err != nil {
		t.Skipf("no SysV shared memory here: %v", err)
	}
	defer unix.SysvShmCtl(left, unix.IPC_RMID, nil)
	pid := fmt.Sprintf("99999\n%s\n1700000000\n5432\n/tmp\n127.0.0.1\n  5432001 %d\nready\n", data, left)
	if err := os.WriteFile(filepath.Join(data, "postmaster.pid"), []byte(pid), 0o600); err != nil {
		t.Fatal(err)
	}
	// A segment in use (attached here) is never removed.
	used, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.SysvShmCtl(used, unix.IPC_RMID, nil)
	mem, err := unix.SysvShmAttach(used, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.SysvShmDetach(mem)
	other := filepath.Join(dead, "postgres-1", "data")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	pid = fmt.Sprintf("99998\n%s\n1700000000\n5433\n/tmp\n127.0.0.1\n  5433001 %d\nready\n", other, used)
	if err := os.WriteFile(filepath.Join(other, "postmaster.pid"), []byte(pid), 0o600); err != nil {
		t.Fatal(err)
	}

	Reap(parent, "")
	var ds unix.SysvShmDesc
	if _, err := unix.SysvShmCtl(left, unix.IPC_STAT, &ds); err == nil {
		t.Errorf("the segment a killed PostgreSQL left (id %d) is still there", left)
	}
	if _, err := unix.SysvShmCtl(used, unix.IPC_STAT, &ds); err != nil {
		t.Errorf("the segment in use (id %d) was removed: %v", used, err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the orphan directory is still there: %v", err)
	}
}

// gone is the ID of a process that has exited: its pid names nobody (or,
// reused, somebody with another start time).
func gone(t *testing.T) string {
	t.Helper()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d 1", dead.Process.Pid)
}

// orphan makes parent/name, a directory a harness now gone owns, as kill
// -9 leaves it.
func orphan(t *testing.T, parent, name string) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, File), []byte(gone(t)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
