package clientprotocol

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/internal/testenv"
)

// curatorCommand is the curator row's command, run from this package's
// directory, after skipping (failing under CI: make deps installs them)
// when ZooKeeper, a JDK or Debian's Curator jars are missing. It compiles
// the adapter first (curator_lock.sh --build, cached by the source's hash),
// as the row does before its clients start, so that no open waits on javac.
func curatorCommand(t *testing.T) []string {
	t.Helper()
	testenv.Require(t, "java")
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
		testenv.Missing(t, "zookeeper")
	}
	if _, err := os.Stat("/usr/lib/jvm/default-java/bin/javac"); err != nil && !testenv.Has("javac") {
		testenv.Missing(t, "default-jdk-headless (javac, to build clients/java/CuratorLock.java)")
	}
	if _, err := os.Stat(backends.CuratorJar); err != nil {
		testenv.Missing(t, "libcurator-recipes-java ("+backends.CuratorJar+")")
	}
	p, ok := backends.ProgramOf("curator")
	if !ok {
		t.Fatal("no curator row")
	}
	cmd := p.Command
	for i, a := range cmd {
		if strings.HasPrefix(a, "clients/") {
			cmd[i] = filepath.Join("..", filepath.FromSlash(a))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cmd[0], append(cmd[1:], "--build")...).CombinedOutput(); err != nil {
		t.Fatalf("%v --build: %v\n%s", cmd, err, out)
	}
	return cmd
}

// TestCuratorAdapterKeepsTheProtocol drives the curator row's adapter
// (clients/java/CuratorLock.java, Apache Curator's InterProcessMutex)
// through client-check against a real ZooKeeper: every rule kept — a
// timeout or a cut link answered info, never fail, late grants given back,
// reconnection, close and stdin's end.
func TestCuratorAdapterKeepsTheProtocol(t *testing.T) {
	cmd := curatorCommand(t)
	rep, err := Check(context.Background(), CheckOptions{Command: cmd, Servers: []string{"zookeeper"}, Timeout: libraryTimeout, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if b := rep.Broken(); len(b) > 0 {
		t.Fatalf("%d rules broken:\n%s", len(b), rep.Text())
	}
	if len(rep.Findings) < 10 {
		t.Errorf("only %d rules checked:\n%s", len(rep.Findings), rep.Text())
	}
}

// TestCuratorAdapterMissingJDK: with no JDK where it looks (JAVA_HOME
// naming none), the adapter says so in one line on stderr, naming the
// package make deps installs, and exits 69 — no stack trace, no protocol
// output.
func TestCuratorAdapterMissingJDK(t *testing.T) {
	cmd := curatorCommand(t)
	c := exec.Command(cmd[0], cmd[1:]...)
	c.Env = append(os.Environ(), "JAVA_HOME="+t.TempDir())
	var stdout, stderr strings.Builder
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 69 {
		t.Fatalf("exit %v, want status 69; stderr:\n%s", err, stderr.String())
	}
	msg := strings.TrimRight(stderr.String(), "\n")
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "javac") || !strings.Contains(msg, "make deps installs default-jdk-headless") {
		t.Errorf("stderr %q: want one line naming javac and default-jdk-headless", msg)
	}
	if stdout.Len() > 0 {
		t.Errorf("stdout %q: want nothing", stdout.String())
	}
}
