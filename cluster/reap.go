package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ownerFile, in a cluster's temporary directory, names the harness process
// that owns it: "pid starttime" (the start time from /proc tells a reused
// pid from the owner).
const ownerFile = ".locktorture-owner"

// tempPattern is the name pattern of every cluster's temporary directory.
const tempPattern = "locktorture-"

// writeOwner records this process as the owner of dir.
func writeOwner(dir string) error {
	id, err := procIdentity(os.Getpid())
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(id+"\n"), 0o644); err != nil {
		return fmt.Errorf("cluster: owner file: %w", err)
	}
	return nil
}

// reapOrphans removes the temporary directories that earlier harnesses left
// in parent when they died without cleaning up (kill -9 cannot be caught;
// their servers die with them, their data directories do not): every
// locktorture-* directory but keep whose owner process is gone. A directory
// without an owner file, or whose owner still runs, is left alone. It is
// best effort.
func reapOrphans(parent, keep string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		dir := filepath.Join(parent, e.Name())
		if !e.IsDir() || !strings.HasPrefix(e.Name(), tempPattern) || dir == keep {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		if ownerAlive(strings.TrimSpace(string(b))) {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

// ownerAlive reports whether the process an owner file names still runs.
// An unreadable owner file counts as alive, so nothing is removed on a guess.
func ownerAlive(owner string) bool {
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
