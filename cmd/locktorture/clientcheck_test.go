package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readyAdapter writes an adapter that, given the open request, says so (a
// file named $READY, holding the pid of a child it started), then never
// answers: its child (sleep) outlives it when the check is killed with
// SIGKILL (the adapter dies with the check; its child does not).
func readyAdapter(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ready.sh")
	script := `#!/bin/sh
read -r line
sleep 1000 &
echo $! > "$READY.tmp"
mv "$READY.tmp" "$READY"
wait
`
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// check is a client-check of the built binary, running.
type check struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan error // its Wait's error, once it exited
	orphan         int        // the pid of its adapter's child
}

// startCheck starts the built binary's client-check on adapter with
// TMPDIR tmp and waits until the adapter has its open request.
func startCheck(t *testing.T, tmp, adapter string) *check {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	c := &check{cmd: exec.Command(binPath, "client-check", "--exec", "/bin/sh "+adapter), done: make(chan error, 1)}
	c.cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "READY="+ready)
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() { c.kill(syscall.SIGKILL) })
	for {
		if b, err := os.ReadFile(ready); err == nil {
			c.orphan, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			t.Cleanup(func() { _ = syscall.Kill(c.orphan, syscall.SIGKILL) })
			return c
		}
		select {
		case err := <-c.done:
			c.done <- err
			t.Fatalf("client-check ended (%v) before its adapter was opened: %s%s", err, c.stdout.String(), c.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// kill sends sig and waits for the check to exit; it returns its Wait's
// error.
func (c *check) kill(sig syscall.Signal) error {
	_ = c.cmd.Process.Signal(sig)
	err := <-c.done
	c.done <- err
	return err
}

// TestClientCheckCtrlC: SIGINT while the adapter has not answered open is
// "interrupted", exit 255, and no verdict — not "BROKEN open ... no reply
// within 10s" for a wait it cut short — and nothing left behind.
func TestClientCheckCtrlC(t *testing.T) {
	requireRedis(t)
	tmp := t.TempDir()
	c := startCheck(t, tmp, readyAdapter(t))
	err := c.kill(syscall.SIGINT)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitHarness {
		t.Errorf("exit %v, want 255", err)
	}
	if !strings.Contains(c.stderr.String(), "locktorture client-check: interrupted") {
		t.Errorf("stderr does not say interrupted:\n%s", c.stderr.String())
	}
	if out := c.stdout.String(); strings.Contains(out, "BROKEN") || strings.Contains(out, "the adapter") {
		t.Errorf("an interrupted check gave a verdict:\n%s", out)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "locktorture-*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestClientCheckKilledLeavesNothing: client-check killed with SIGKILL
// leaves its temporary directories (locktorture-client-check-* and
// -cmd-*) and its adapter's child; the next client-check removes them and
// ends the child — but never what a client-check still running owns.
func TestClientCheckKilledLeavesNothing(t *testing.T) {
	requireRedis(t)
	tmp := t.TempDir()
	adapter := readyAdapter(t)
	owned := func() []string {
		var out []string
		for _, p := range []string{"locktorture-client-check-cmd-*", "locktorture-client-check-[0-9]*"} {
			m, _ := filepath.Glob(filepath.Join(tmp, p))
			out = append(out, m...)
		}
		return out
	}

	killed := startCheck(t, tmp, adapter)
	left := owned()
	if len(left) != 2 {
		t.Fatalf("want the check's two temporary directories, found %v", left)
	}
	_ = killed.kill(syscall.SIGKILL)

	// One still running: what it owns stays.
	live := startCheck(t, tmp, adapter)
	var liveDirs []string
	for _, d := range owned() {
		if d != left[0] && d != left[1] {
			liveDirs = append(liveDirs, d)
		}
	}
	if len(liveDirs) != 2 {
		t.Fatalf("want the running check's two temporary directories, found %v", liveDirs)
	}

	// The next check, run to its end.
	crash := filepath.Join(t.TempDir(), "crash.sh")
	if err := os.WriteFile(crash, []byte("#!/bin/sh\nread -r line\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	next := exec.Command(binPath, "client-check", "--exec", "/bin/sh "+crash)
	next.Env = append(os.Environ(), "TMPDIR="+tmp)
	if out, err := next.CombinedOutput(); err == nil || !strings.Contains(string(out), "BROKEN") {
		t.Fatalf("the next check: %v\n%s", err, out)
	}
	for _, d := range left {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s, left by a client-check killed with SIGKILL, outlived the next one", d)
		}
	}
	if !zombie(killed.orphan) {
		t.Errorf("process %d, left by the killed check's adapter, outlived the next check", killed.orphan)
	}
	if zombie(live.orphan) {
		t.Errorf("process %d, of a check still running, was ended", live.orphan)
	}
	for _, d := range liveDirs {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s, owned by a client-check still running, was removed: %v (its stderr: %s)", d, err, live.stderr.String())
		}
	}
	_ = live.kill(syscall.SIGINT)
	if left, _ := filepath.Glob(filepath.Join(tmp, "locktorture-*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// zombie reports whether pid has exited and waits for its parent.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) == 0 || f[0] == "Z" || f[0] == "X"
}
