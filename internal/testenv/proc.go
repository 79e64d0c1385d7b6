package testenv

import (
	"os/exec"
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
