package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/locktorture/locktorture/cluster/local"
)

// TestNewReapsOrphans: a new cluster removes the temporary directories of
// harnesses that died without cleaning up, and only those.
func TestNewReapsOrphans(t *testing.T) {
	parent := t.TempDir()
	// A process that has exited: its pid names nobody (or somebody else).
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	self, err := local.OwnerID()
	if err != nil {
		t.Fatal(err)
	}
	dirs := []struct {
		name, owner string // owner "" writes no owner file
		kept        bool
	}{
		{"locktorture-dead", fmt.Sprintf("%d 1", dead.Process.Pid), false},
		{"locktorture-reused-pid", fmt.Sprintf("%d 1", os.Getpid()), false}, // our pid, another start time
		{"locktorture-alive", self, true},
		{"locktorture-no-owner", "", true},
		{"locktorture-garbled", "not a pid", true},
		{"someone-else", fmt.Sprintf("%d 1", dead.Process.Pid), true},
	}
	for _, d := range dirs {
		p := filepath.Join(parent, d.name, "postgres")
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if d.owner != "" {
			if err := os.WriteFile(filepath.Join(parent, d.name, local.OwnerFile), []byte(d.owner+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	c, err := New(Options{TempDir: parent})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		_, err := os.Stat(filepath.Join(parent, d.name))
		if kept := err == nil; kept != d.kept {
			t.Errorf("%s: kept %v, want %v", d.name, kept, d.kept)
		}
	}
	// The new cluster's own directory names its owner, and goes on Close.
	b, err := os.ReadFile(filepath.Join(c.TempDir(), local.OwnerFile))
	if err != nil || string(b) != self+"\n" {
		t.Errorf("owner file %q, %v; want %q", b, err, self)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.TempDir()); !os.IsNotExist(err) {
		t.Errorf("temp dir left after Close: %v", err)
	}
}

// TestReapKillsStoppedLeftovers: a process left stopped (SIGSTOP, as by a
// server-pause) in a dead harness's directory is ended by the next cluster,
// not left in state T forever.
func TestReapKillsStoppedLeftovers(t *testing.T) {
	parent := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "locktorture-killed")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, local.OwnerFile), []byte(fmt.Sprintf("%d 1\n", dead.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
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
	local.Reap(parent, "")
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
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(parent, "locktorture-dead")
	data := filepath.Join(orphan, "postgres-0", "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(orphan, local.OwnerFile), fmt.Appendf(nil, "%d 1\n", dead.Process.Pid), 0o644); err != nil {
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
	other := filepath.Join(orphan, "postgres-1", "data")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	pid = fmt.Sprintf("99998\n%s\n1700000000\n5433\n/tmp\n127.0.0.1\n  5433001 %d\nready\n", other, used)
	if err := os.WriteFile(filepath.Join(other, "postmaster.pid"), []byte(pid), 0o600); err != nil {
		t.Fatal(err)
	}

	c, err := New(Options{TempDir: parent})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var ds unix.SysvShmDesc
	if _, err := unix.SysvShmCtl(left, unix.IPC_STAT, &ds); err == nil {
		t.Errorf("the segment a killed PostgreSQL left (id %d) is still there", left)
	}
	if _, err := unix.SysvShmCtl(used, unix.IPC_STAT, &ds); err != nil {
		t.Errorf("the segment in use (id %d) was removed: %v", used, err)
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Errorf("the orphan directory is still there: %v", err)
	}
}

// TestMarkOwnedIsSwept: a directory MarkOwned by a process now gone (a
// shrink's scratch store after kill -9) is removed by SweepLeftovers, which
// every run calls; one whose owner runs stays.
func TestMarkOwnedIsSwept(t *testing.T) {
	tmp := t.TempDir()
	dead := filepath.Join(tmp, "locktorture-shrink-dead")
	mine := filepath.Join(tmp, "locktorture-shrink-mine")
	for _, d := range []string{dead, mine} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dead, local.OwnerFile), []byte("2147483 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := local.MarkOwned(mine); err != nil {
		t.Fatal(err)
	}
	SweepLeftovers(context.Background(), tmp)
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("a dead harness's scratch store is still there: %v", err)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("a live one's was removed: %v", err)
	}
}
