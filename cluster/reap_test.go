package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/locktorture/locktorture/internal/owner"
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
	self, err := owner.ID()
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
			if err := os.WriteFile(filepath.Join(parent, d.name, owner.File), []byte(d.owner+"\n"), 0o644); err != nil {
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
	b, err := os.ReadFile(filepath.Join(c.TempDir(), owner.File))
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
	if err := os.WriteFile(filepath.Join(dead, owner.File), []byte("2147483 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := owner.Mark(mine); err != nil {
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
