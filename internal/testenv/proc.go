package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// ProcState is the state ps says process pid is in (its first letter: R,
// S, T for stopped, Z), for a test that pauses a server.
func ProcState(t testing.TB, pid int) string {
	t.Helper()
	out, err := exec.Command("ps", "-o", "state=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		t.Fatalf("ps: %v", err)
	}
	return string(out[:1])
}

// WriteFile writes text to a file named name in a directory of the test's
// own and returns its path (a servers file, as a user's is read).
func WriteFile(t testing.TB, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
