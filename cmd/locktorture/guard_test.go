package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster/docker"
	"github.com/locktorture/locktorture/internal/testenv"
)

// someoneElsesRedis runs a Redis in a container of the test's own (host
// network), as a user's standing cluster would, and returns its address
// and container name; the test removes it at the end.
func someoneElsesRedis(t *testing.T) (addr, name string) {
	t.Helper()
	testenv.RequireDocker(t, docker.LocalImage)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name = "lt-guard-test-" + hex.EncodeToString(b[:])
	out, err := exec.Command("docker", "run", "-d", "--network", "host", "--name", name, docker.LocalImage,
		"redis-server", "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no").CombinedOutput()
	if err != nil {
		t.Fatalf("docker run: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
	addr = fmt.Sprintf("127.0.0.1:%d", port)
	for {
		if out, _ := exec.Command("redis-cli", "-p", fmt.Sprint(port), "ping").Output(); strings.TrimSpace(string(out)) == "PONG" {
			return addr, name
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// containerState is docker inspect's "Paused Status" of a container.
func containerState(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("docker", "inspect", "--format", "{{.State.Paused}} {{.State.Status}}", name).CombinedOutput()
	if err != nil {
		t.Fatalf("docker inspect: %v: %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestKill9InsideServerPause: kill -9 of a harness while its server-pause
// holds someone else's container (control: docker) frozen: the run's guard
// thaws the container and removes the run's keys, with no later run; the
// journal is gone.
func TestKill9InsideServerPause(t *testing.T) {
	t.Parallel() // after the package's other tests: make test may still be building the image
	testenv.Require(t, "redis-server", "redis-cli")
	addr, name := someoneElsesRedis(t)
	dir := t.TempDir()
	journals := filepath.Join(dir, "journal")
	servers := writeFile(t, "servers.yaml", fmt.Sprintf("redis:\n  - {addr: %s, control: docker, container: %s}\n", addr, name))
	sc := writeFile(t, "pause.yaml", `name: guard-test
backend: redis-token
clients: 2
keys: 1
ttl: 1s
hold: 20ms
duration: 60s
timeout: 300ms
nemesis:
  script:
    - fault: server-pause
      servers: [A]
      at: 500ms
      for: 50s
`)
	cmd := exec.Command(binPath, "run", "--scenario-file", sc, "--servers", "external", "--servers-file", servers, "--store", filepath.Join(dir, "store"), "--quiet")
	cmd.Env = append(os.Environ(), "LOCKTORTURE_JOURNAL_DIR="+journals)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() { _ = cmd.Wait(); close(ended) }()
	for containerState(t, name) != "true paused" {
		select {
		case <-ended:
			t.Fatalf("the run ended before its pause: %s", out.String())
		default:
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-ended
	killed := time.Now()
	for containerState(t, name) != "false running" {
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("container %s thawed %s after kill -9 of its harness", name, time.Since(killed).Round(10*time.Millisecond))
	for {
		left, _ := filepath.Glob(filepath.Join(journals, "*"))
		if len(left) == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	keys, err := exec.Command("redis-cli", "-p", strings.TrimPrefix(addr, "127.0.0.1:"), "--scan").Output()
	if err != nil || strings.TrimSpace(string(keys)) != "" {
		t.Errorf("keys left on someone else's server: %q (%v)", keys, err)
	}
}

// TestNextRunReportsDamagedJournal: journals left by a harness and guard
// both killed, then overwritten with garbage or cut short, are not passed
// over: the next run says so, one line each naming the file, and keeps
// them (never removed unread).
func TestNextRunReportsDamagedJournal(t *testing.T) {
	journals := t.TempDir()
	garbage := filepath.Join(journals, "run-garbage.jsonl")
	cut := filepath.Join(journals, "run-cut.jsonl")
	files := map[string]string{
		garbage: "\x00\x17garbage\n\xff{not json",
		// A dead owner (no such pid), an act undone, and one cut short.
		cut: `{"owner":"999999999 1","run":"store/x","time":1}` + "\n" +
			`{"add":1,"action":{"kind":"docker-restore","args":{"container":"c1"}}}` + "\n" + `{"done":1}` + "\n" +
			`{"add":2,"action":{"kind":"docker-restore","args":{"container":"users-db"`,
	}
	old := time.Now().Add(-time.Hour)
	for p, text := range files {
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(binPath, "run", "--scenario", "baseline", "--backend", "mutex", "--duration", "200ms", "--store", t.TempDir())
	cmd.Env = append(os.Environ(), "LOCKTORTURE_JOURNAL_DIR="+journals)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	_ = cmd.Run() // the mutex's verdict is not this test's
	for p := range files {
		var lines []string
		for l := range strings.Lines(stderr.String()) {
			if strings.Contains(l, p) {
				lines = append(lines, l)
			}
		}
		if len(lines) != 1 || !strings.Contains(lines[0], "cannot be read whole") {
			t.Errorf("the run said of %s: %q, want one line saying it cannot be read whole\n%s", p, lines, stderr.String())
		}
		if _, err := os.Stat(p); err != nil {
			t.Errorf("a journal that could not be read whole is gone: %v", err)
		}
	}
	if !strings.Contains(stderr.String(), "users-db") {
		t.Errorf("the cut journal's report does not show what it may have left undone (container users-db):\n%s", stderr.String())
	}
}
