package leakcheck

import (
	"net"
	"os"
	"os/exec"
	"testing"
)

// The checks must see what they look for, or their silence means nothing.
func TestChecksSee(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	found := false
	for _, p := range Listeners(os.Getpid()) {
		found = found || p == port
	}
	if !found {
		t.Errorf("Listeners misses port %d: %v", port, Listeners(os.Getpid()))
	}
	l.Close()
	for _, p := range Listeners(os.Getpid()) {
		if p == port {
			t.Errorf("Listeners still reports closed port %d", port)
		}
	}

	dir := t.TempDir()
	cmd := exec.Command("sleep", "30")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if len(ProcessesUnder(dir)) != 1 {
		t.Errorf("ProcessesUnder misses a process running in %s", dir)
	}
	if len(StoppedUnder(dir)) != 0 {
		t.Error("a running process reported stopped")
	}
	_ = cmd.Process.Signal(stopSignal)
	for i := 0; i < 1000 && len(StoppedUnder(dir)) == 0; i++ {
		waitABit()
	}
	if len(StoppedUnder(dir)) != 1 {
		t.Error("StoppedUnder misses a stopped process")
	}
}
