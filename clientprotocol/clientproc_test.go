package clientprotocol

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/owner"
)

// TestMain lets the test binary be `locktorture client`: the launcher
// tests start it as a child with ConfigEnv set.
// With LT_TEST_ADAPTER=late (or ignore-auth) it is lateAdapter instead.
func TestMain(m *testing.M) {
	if mode := os.Getenv(adapterEnv); mode == "late" || mode == "ignore-auth" {
		lateAdapter(mode == "ignore-auth")
		os.Exit(0)
	}
	if raw := os.Getenv(ConfigEnv); raw != "" && len(os.Args) > 1 && os.Args[1] == "client" {
		var cfg ChildConfig
		if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
			os.Exit(254)
		}
		if err := Serve(context.Background(), os.Stdin, os.Stdout, cfg); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(255)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// procsOf makes n processes recording into rec.
func procsOf(n int, rec *history.Recorder) Procs {
	var p Procs
	for i := range n {
		p.Gates = append(p.Gates, clientfault.NewGate())
		p.Clocks = append(p.Clocks, clientfault.NewClock())
		p.History = append(p.History, rec.Proc(i))
	}
	return p
}

// alive lists the processes of group pgid that are not zombies.
func alive(t *testing.T, pgid int) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
			out = append(out, e.Name()+" "+f[0])
		}
	}
	return out
}

// waitGone waits until no process of group pgid is left (the test's own
// deadline bounds it).
func waitGone(t *testing.T, pgid int) {
	t.Helper()
	for len(alive(t, pgid)) > 0 {
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBrokenClients: each way a client can break the protocol gives one
// line naming the client and its log, and leaves no process behind.
func TestBrokenClients(t *testing.T) {
	cases := []struct {
		script string
		want   error
		says   string
	}{
		{"crash.sh", errExited, "signal: segmentation fault"},
		{"hang-open.sh", errOpen, "no reply to open"},
		{"bad-json.sh", errProtocol, "bad JSON"},
		{"unknown-id.sh", errProtocol, "id 7"},
		{"unknown-type.sh", errProtocol, `unknown type "maybe"`},
		{"early-exit.sh", errExited, "before it was told to close (exit status 0; its stderr ended: early-exit.sh: bye)"},
		{"import-error.sh", errExited, `import redis | ModuleNotFoundError: No module named 'redis'`},
		{"long-line.sh", errProtocol, "a line over 1 MiB (the protocol's limit)"},
	}
	for _, tc := range cases {
		t.Run(tc.script, func(t *testing.T) {
			dir := t.TempDir()
			rec := history.NewRecorder(nil, history.RecorderOptions{})
			l := New(Options{Command: []string{"/bin/sh", filepath.Join("testdata", tc.script)}, Dir: dir,
				// The acquire's reply is the broken part, however late a
				// loaded machine makes it: a request timeout it could miss
				// would make it an info, not the error under test (the same
				// for the open of all but hang-open.sh).
				TTL: time.Second, Timeout: 10 * time.Second, OpenTimeout: 2 * time.Second})
			ctx := context.Background()
			err := l.Start(ctx, procsOf(1, rec))
			pgid := 0
			if len(l.children) > 0 {
				pgid = l.children[0].pgid
			}
			if err == nil {
				c, cerr := l.Client(ctx, backends.ClientEnv{Process: 0})
				if cerr != nil {
					t.Fatal(cerr)
				}
				actx, cancel := context.WithTimeout(ctx, 10*time.Second)
				_, aerr := c.Acquire(actx, "k0")
				cancel()
				if tc.script != "early-exit.sh" && !errors.Is(aerr, backends.ErrAbort) {
					t.Errorf("Acquire: %v, want an error wrapping ErrAbort", aerr)
				}
				<-l.Failed()
				err = l.Err()
			}
			_ = l.Close()
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want one wrapping %v", err, tc.want)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, "client 0") || !strings.Contains(msg, filepath.Join(dir, "client-0.log")) || !strings.Contains(msg, tc.says) {
				t.Errorf("error %q: want one line naming client 0, its log and %q", msg, tc.says)
			}
			if pgid == 0 {
				t.Fatal("no child was started")
			}
			waitGone(t, pgid)
		})
	}
}

// TestGoodClient drives a shell client through open, acquire (with events)
// and release, and checks what the harness made of its replies.
func TestGoodClient(t *testing.T) {
	rec := history.NewRecorder(nil, history.RecorderOptions{Keep: true})
	l := New(Options{Command: []string{"/bin/sh", "testdata/good.sh"}, Dir: t.TempDir(), TTL: time.Second, Timeout: time.Second})
	ctx := context.Background()
	procs := procsOf(1, rec)
	if err := l.Start(ctx, procs); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !l.Has(abilityExtend) || l.Has(AbilityClock) {
		t.Errorf("abilities %v, want [extend]", l.abilities(0))
	}
	c, _ := l.Client(ctx, backends.ClientEnv{Process: 0})
	h := procs.History[0]
	if _, err := h.Invoke(ctx, history.Op{F: history.Acquire, Key: "k0"}); err != nil {
		t.Fatal(err)
	}
	g, err := c.Acquire(ctx, "k0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Complete(history.Op{Type: history.OK, F: history.Acquire, Key: "k0"}); err != nil {
		t.Fatal(err)
	}
	if g.Fence == nil || *g.Fence != 1 || !g.HasLease || g.Lease != 900*time.Millisecond {
		t.Errorf("grant fence %v lease %v (%v), want fence 1, lease 900ms", g.Fence, g.Lease, g.HasLease)
	}
	<-g.Lost // the lost event closes it
	if err := c.Release(ctx, "k0", g); !errors.Is(err, backends.ErrNotHeld) {
		t.Errorf("Release: %v, want ErrNotHeld", err)
	}
	_ = l.Close()
	var extends []string
	for _, op := range rec.History() {
		if op.F == history.Extend {
			extends = append(extends, string(op.Type))
		}
	}
	if strings.Join(extends, ",") != "invoke,ok" {
		t.Errorf("extend ops %v, want invoke then ok", extends)
	}
	if err := l.Err(); err != nil {
		t.Errorf("a good client failed: %v", err)
	}
}

// TestPauseFreezesProcess runs `locktorture client` (this test binary)
// with the mutex backend: a paused gate stops the whole process (state T)
// and a resumed one continues it; the client works before and after.
func TestPauseFreezesProcess(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rec := history.NewRecorder(nil, history.RecorderOptions{})
	l := New(Options{Command: []string{self, "client"}, Dir: t.TempDir(), TTL: time.Second, Timeout: time.Second,
		Builtin: &ChildConfig{Backend: "mutex", Env: backends.Env{Clients: 1, Keys: []string{"k0"}}}})
	ctx := context.Background()
	procs := procsOf(1, rec)
	if err := l.Start(ctx, procs); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !l.Has(AbilityClock) {
		t.Errorf("locktorture client announced %v, want clock among them", l.abilities(0))
	}
	c, _ := l.Client(ctx, backends.ClientEnv{Process: 0})
	g, err := c.Acquire(ctx, "k0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, "k0"); !errors.Is(err, backends.ErrBusy) {
		t.Errorf("second Acquire: %v, want busy", err)
	}
	pid := l.children[0].pgid
	state := func() string {
		a := alive(t, pid)
		if len(a) == 0 {
			return "gone"
		}
		return strings.Fields(a[0])[1]
	}
	procs.Gates[0].Pause()
	for state() != "T" {
		time.Sleep(5 * time.Millisecond)
	}
	procs.Gates[0].Resume()
	for state() == "T" {
		time.Sleep(5 * time.Millisecond)
	}
	if err := c.Release(ctx, "k0", g); err != nil {
		t.Errorf("Release after the pause: %v", err)
	}
	_ = l.Close()
	waitGone(t, pid)
}

// TestWedgedClient: a client that stops answering after its first acquire
// fails the run, naming itself and its log, once a request has gone
// unanswered past its timeout plus the grace; a pause does not count.
func TestWedgedClient(t *testing.T) {
	dir := t.TempDir()
	rec := history.NewRecorder(nil, history.RecorderOptions{})
	l := New(Options{Command: []string{"/bin/sh", "testdata/wedge.sh"}, Dir: dir, TTL: time.Second, Timeout: 100 * time.Millisecond, ReplyGrace: 300 * time.Millisecond})
	defer l.Close()
	ctx := context.Background()
	procs := procsOf(1, rec)
	if err := l.Start(ctx, procs); err != nil {
		t.Fatal(err)
	}
	c, _ := l.Client(ctx, backends.ClientEnv{Process: 0})
	if _, err := c.Acquire(ctx, "k0"); err != nil {
		t.Fatalf("first Acquire: %v", err)
	}
	// Paused by the harness, a silent child is not wedged.
	procs.Gates[0].Pause()
	actx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err := c.Acquire(actx, "k1")
	cancel()
	if err == nil || errors.Is(err, backends.ErrAbort) {
		t.Fatalf("second Acquire: %v, want a timeout", err)
	}
	time.Sleep(600 * time.Millisecond)
	if l.Err() != nil {
		t.Fatalf("a paused client counted as wedged: %v", l.Err())
	}
	procs.Gates[0].Resume()
	<-l.Failed()
	err = l.Err()
	msg := err.Error()
	if !errors.Is(err, errWedged) || !strings.Contains(msg, "client 0") || !strings.Contains(msg, filepath.Join(dir, "client-0.log")) {
		t.Errorf("error %q: want ErrWedged naming client 0 and its log", msg)
	}
}

// TestDetachedChild: a client that leaves a process of its own session
// holding its stdout and stderr does not hang Close; the process is named
// in the warnings and killed.
func TestDetachedChild(t *testing.T) {
	rec := history.NewRecorder(nil, history.RecorderOptions{})
	l := New(Options{Command: []string{"/bin/sh", "testdata/detach.sh"}, Dir: t.TempDir(), TTL: time.Second, Timeout: time.Second})
	ctx := context.Background()
	if err := l.Start(ctx, procsOf(1, rec)); err != nil {
		t.Fatal(err)
	}
	c, _ := l.Client(ctx, backends.ClientEnv{Process: 0})
	if _, err := c.Acquire(ctx, "k0"); err != nil {
		t.Fatal(err)
	}
	tag := l.children[0].tag
	if left := procsTagged(func(s string) bool { return s == tag }); len(left) < 2 {
		t.Fatalf("processes tagged %s: %v, want the client and its sleep", tag, left)
	}
	_ = l.Close() // hung forever before: the sleep holds the pipes
	if err := l.Err(); err != nil {
		t.Errorf("a client that closed failed: %v", err)
	}
	ws := strings.Join(l.Warnings(), "\n")
	if !strings.Contains(ws, "sleep 3600") || !strings.Contains(ws, "client 0 left process") {
		t.Errorf("warnings %q: want the sleep named", ws)
	}
	if left := procsTagged(func(s string) bool { return s == tag }); len(left) > 0 {
		t.Errorf("left running: %v", left)
	}
}

// TestLogCap: a client writing more to stderr than the cap keeps the log's
// head and tail, says in it how much was cut, and warns.
func TestLogCap(t *testing.T) {
	dir := t.TempDir()
	rec := history.NewRecorder(nil, history.RecorderOptions{})
	l := New(Options{Command: []string{"/bin/sh", "testdata/chatty.sh"}, Dir: dir, TTL: time.Second, Timeout: time.Second, logCap: 1 << 20})
	ctx := context.Background()
	if err := l.Start(ctx, procsOf(1, rec)); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	b, err := os.ReadFile(filepath.Join(dir, "client-0.log"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if len(b) > 1<<20+200 || !strings.HasPrefix(s, "chatty.sh: first line\n") || !strings.HasSuffix(s, "chatty.sh: last line\n") || !strings.Contains(s, "bytes cut here") {
		t.Errorf("log of %d bytes, head %q, tail %q: want 1 MiB with its first and last lines and a cut marker", len(b), s[:min(40, len(s))], s[max(0, len(s)-40):])
	}
	if ws := strings.Join(l.Warnings(), "\n"); !strings.Contains(ws, "client 0's log was cut") {
		t.Errorf("warnings %q: want the cut log named", ws)
	}
}

// TestReapOrphans: a process a client of a harness now gone left behind
// (kill -9 of the harness) is killed by ReapOrphans; one whose harness
// still runs is left alone.
func TestReapOrphans(t *testing.T) {
	self, err := owner.ID()
	if err != nil {
		t.Fatal(err)
	}
	start := func(owner string) *exec.Cmd {
		cmd := exec.Command("sleep", "100")
		cmd.Env = append(os.Environ(), ownerEnv+"="+owner+"/1.0")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	orphan := start("2147483 1") // no such pid
	mine := start(self)
	reaped := ReapOrphans()
	var pids []int
	for _, p := range reaped {
		pids = append(pids, p.PID)
	}
	if !slices.Contains(pids, orphan.Process.Pid) || slices.Contains(pids, mine.Process.Pid) {
		t.Errorf("reaped %v: want the orphan %d and not %d", reaped, orphan.Process.Pid, mine.Process.Pid)
	}
	if err := orphan.Wait(); err == nil {
		t.Error("the orphan exited on its own")
	}
	if mine.ProcessState != nil || syscall.Kill(mine.Process.Pid, 0) != nil {
		t.Error("a live harness's client process was killed")
	}
}

// TestDeafClient: a client that stops reading its stdin cannot block the
// harness: a request that cannot be written within the grace makes it
// wedged (it hung for ever before).
func TestDeafClient(t *testing.T) {
	dir := t.TempDir()
	rec := history.NewRecorder(nil, history.RecorderOptions{})
	l := New(Options{Command: []string{"/bin/sh", "testdata/deaf.sh"}, Dir: dir, TTL: time.Second, Timeout: 100 * time.Millisecond, ReplyGrace: 300 * time.Millisecond})
	defer l.Close()
	ctx := context.Background()
	if err := l.Start(ctx, procsOf(1, rec)); err != nil {
		t.Fatal(err)
	}
	c, _ := l.Client(ctx, backends.ClientEnv{Process: 0})
	// One request larger than a pipe's buffer.
	_, err := c.Acquire(ctx, strings.Repeat("k", 200_000))
	if !errors.Is(err, backends.ErrAbort) || !errors.Is(l.Err(), errWedged) || !strings.Contains(l.Err().Error(), "read nothing of its stdin") {
		t.Fatalf("Acquire: %v; launcher: %v; want ErrWedged: it read nothing of its stdin", err, l.Err())
	}
}
