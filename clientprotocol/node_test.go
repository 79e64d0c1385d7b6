package clientprotocol

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/testenv"
)

// nodeCommand is `clients/node/run.sh ARGS` from this package's
// directory, after skipping (failing under CI: make deps gets them) when
// node or the adapter's Debian library (node-redis, node-pg) is missing:
// the adapter started with its stdin closed exits 0 when it has its
// library (stdin's end: the harness is gone), 69 with one line naming
// what is missing.
func nodeCommand(t *testing.T, debian string, args ...string) []string {
	t.Helper()
	if !testenv.Has("node") && !testenv.Has("nodejs") {
		testenv.Missing(t, "nodejs")
	}
	cmd := append([]string{filepath.Join("..", "clients", "node", "run.sh")}, args...)
	c := exec.Command(cmd[0], cmd[1:]...)
	var stderr strings.Builder
	c.Stderr = &stderr
	err := c.Run()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() == 69 {
		testenv.Missing(t, debian+" ("+strings.TrimSpace(stderr.String())+")")
	}
	if err != nil {
		t.Fatalf("%v with stdin closed: %v\n%s", cmd, err, stderr.String())
	}
	return cmd
}

// TestNodeAdaptersKeepTheProtocol drives the Node.js kit's adapters
// (clients/node: the renewing Redis lock on node-redis, the PostgreSQL
// advisory lock on node-pg, session- and transaction-scoped) through
// client-check against real servers: every rule kept — a timeout or a cut
// link answered info, never fail, late grants given back, reconnection,
// close and stdin's end.
func TestNodeAdaptersKeepTheProtocol(t *testing.T) {
	for _, tc := range []struct {
		name    string
		debian  string
		args    []string
		servers []string
		need    []string
	}{
		{"redis-lock", "node-redis", []string{"redis-lock.js"}, []string{"redis"}, []string{"redis-server"}},
		{"pg-lock", "node-pg", []string{"pg-lock.js"}, []string{"postgres"}, []string{"postgres"}},
		{"pg-lock xact", "node-pg", []string{"pg-lock.js", "xact"}, []string{"postgres"}, []string{"postgres"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testenv.Require(t, tc.need...)
			cmd := nodeCommand(t, tc.debian, tc.args...)
			rep, err := Check(context.Background(), CheckOptions{Command: cmd, Servers: tc.servers, Timeout: libraryTimeout, Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if b := rep.Broken(); len(b) > 0 {
				t.Fatalf("%d rules broken:\n%s", len(b), rep.Text())
			}
			if len(rep.Findings) < 10 {
				t.Errorf("only %d rules checked:\n%s", len(rep.Findings), rep.Text())
			}
		})
	}
}

// TestNodeRedisLockRenewsAndBailsOut: clients/node/redis-lock.js,
// driven line by line against a real Redis, announces extend; holding a
// key it renews it every ttl/3 (extend events: invoke, then ok with the
// lease it gave); when the key is no longer its own (another client's
// value put in its place) its renewal gets 0 and it gives the lock up —
// extend fail, then lost — and answers the release the harness still
// sends with fail "not held". Every line it writes is a message of the
// protocol.
func TestNodeRedisLockRenewsAndBailsOut(t *testing.T) {
	testenv.Require(t, "redis-server")
	cmd := nodeCommand(t, "node-redis", "redis-lock.js")
	ctx := context.Background()
	dir := t.TempDir()
	cl, err := cluster.New(cluster.Options{LogDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.StartKinds(ctx, []string{"redis"}, cluster.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	addr := cl.Servers()[0].Addr()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()

	c := exec.Command(cmd[0], cmd[1:]...)
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = stdin.Close()
		_ = c.Wait()
		if t.Failed() {
			t.Logf("the adapter's stderr:\n%s", stderr.String())
		}
	}()
	msgs := make(chan Message, 100)
	go func() {
		defer close(msgs)
		sc := newLineScanner(stdout)
		for sc.Scan() {
			m, err := parseMessage(sc.Bytes())
			if err != nil {
				t.Errorf("%v", err)
				continue
			}
			msgs <- m
		}
	}()
	send := func(line string) {
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// next is the next message, or the test's end when the adapter ended.
	next := func(want string) Message {
		m, ok := <-msgs
		if !ok {
			t.Fatalf("the adapter's output ended, waiting for %s", want)
		}
		return m
	}
	reply := func(id int64) Message {
		for {
			m := next(fmt.Sprintf("the reply to request %d", id))
			if m.ID != nil && *m.ID == id {
				return m
			}
			if m.ID != nil {
				t.Fatalf("reply %+v, waiting for request %d's", m, id)
			}
		}
	}

	send(fmt.Sprintf(`{"id":0,"op":"open","process":0,"ttl_ms":600,"timeout_ms":1000,"servers":{"redis":[%q]},"options":{}}`, addr))
	if m := reply(0); m.Type != TypeOK || !slices.Contains(m.Abilities, "extend") {
		t.Fatalf("open: %+v, want ok announcing extend", m)
	}
	send(`{"id":1,"op":"acquire","key":"k0"}`)
	if m := reply(1); m.Type != TypeOK || m.LeaseMS == nil || *m.LeaseMS <= 0 || *m.LeaseMS > 600 {
		t.Fatalf("acquire: %+v, want ok with a lease in (0, 600] ms", m)
	}
	// Two renewals that came back ok, each an invoke, then its outcome.
	for ok, open := 0, false; ok < 2; {
		m := next("a renewal")
		switch {
		case m.Event == EventExtend && m.Phase == "invoke" && !open:
			open = true
		case m.Event == EventExtend && m.Phase == "" && open && m.Type == TypeOK && m.LeaseMS != nil && *m.LeaseMS > 0 && *m.LeaseMS <= 600:
			open = false
			ok++
		default:
			t.Fatalf("%+v: want an extend invoke, then its ok with a lease in (0, 600] ms", m)
		}
	}
	// The key taken from it: the next renewal finds 0, and it bails out.
	if err := rdb.Set(ctx, "lock:k0", "someone else", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for lost := false; !lost; {
		m := next("the lost event")
		switch {
		case m.Event == EventExtend && m.Phase == "":
			outcomes = append(outcomes, m.Type)
		case m.Event == EventLost && m.Key == "k0":
			lost = true
		case m.Event != EventExtend:
			t.Fatalf("%+v, waiting for the lost event", m)
		}
	}
	if len(outcomes) == 0 || outcomes[len(outcomes)-1] != TypeFail {
		t.Errorf("renewal outcomes %v before lost: want the last fail (the key no longer its own)", outcomes)
	}
	send(`{"id":2,"op":"release","key":"k0"}`)
	if m := reply(2); m.Type != TypeFail || m.Error != "not held" {
		t.Errorf("release after lost: %+v, want fail \"not held\"", m)
	}
	if v, err := rdb.Get(ctx, "lock:k0").Result(); err != nil || v != "someone else" {
		t.Errorf("lock:k0 is %q (%v): the adapter must leave another's key alone", v, err)
	}
	send(`{"id":3,"op":"close"}`)
	if m := reply(3); m.Type != TypeOK {
		t.Errorf("close: %+v, want ok", m)
	}
	for m := range msgs {
		t.Errorf("after close: %+v", m)
	}
}

// TestNodeKitSaysWhatIsMissing: with no node where the launcher looks, or
// an adapter's library not installed, clients/node says so in one line on
// stderr, naming what make deps installs, and exits 69 — no stack trace,
// no protocol output.
func TestNodeKitSaysWhatIsMissing(t *testing.T) {
	run := filepath.Join("..", "clients", "node", "run.sh")
	kit, err := filepath.Abs(filepath.Join("..", "clients", "node", "protocol.js"))
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(t.TempDir(), "needs-more.js")
	if err := os.WriteFile(probe, []byte(fmt.Sprintf("require(%q).need('locktorture-no-such-module', 'node-no-such-module');\n", kit)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"no node", []string{"LOCKTORTURE_NODE=" + filepath.Join(t.TempDir(), "node")}, []string{"redis-lock.js"}, []string{"no node", "make deps installs Debian's nodejs"}},
		{"no adapter", nil, []string{"no-such-adapter.js"}, []string{"no adapter", "no-such-adapter.js"}},
		{"no library", nil, []string{probe}, []string{"no module locktorture-no-such-module", "node-no-such-module", "make deps"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env == nil && !testenv.Has("node") && !testenv.Has("nodejs") {
				testenv.Missing(t, "nodejs")
			}
			c := exec.Command(run, tc.args...)
			c.Env = append(os.Environ(), tc.env...)
			var stdout, stderr strings.Builder
			c.Stdout, c.Stderr = &stdout, &stderr
			err := c.Run()
			if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 69 {
				t.Fatalf("exit %v, want status 69; stderr:\n%s", err, stderr.String())
			}
			msg := strings.TrimRight(stderr.String(), "\n")
			if strings.Contains(msg, "\n") {
				t.Errorf("stderr %q: want one line", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("stderr %q: want it to say %q", msg, w)
				}
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout %q: want nothing", stdout.String())
			}
		})
	}
}
