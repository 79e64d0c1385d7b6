package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/internal/testenv"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locktorture/locktorture/internal/leakcheck"
)

func requireEtcd(t *testing.T) {
	t.Helper()
	testenv.Require(t, "etcd")
}

// TestEtcdSingle: one member starts healthy, is shared by later calls,
// survives pause/resume and kill/restart with its data, and Close leaves
// no etcd process and no data behind.
func TestEtcdSingle(t *testing.T) {
	requireEtcd(t)
	ctx := context.Background()
	tmp := t.TempDir()
	c, err := New(Options{TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := c.Etcd(ctx, EtcdOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Members()) != 1 || len(e.Endpoints()) != 1 || e.Endpoints()[0] != e.Members()[0].Addr() {
		t.Fatalf("members %v, endpoints %v", e.Members(), e.Endpoints())
	}
	if left := leakcheck.ProcessesUnder(tmp); len(left) != 1 {
		t.Fatalf("leak check does not see the one member: %v", left)
	}
	// Started once: the backend and the resource get the same etcd.
	again, err := c.Etcd(ctx, EtcdOptions{})
	if err != nil || again != e {
		t.Fatalf("second call: %p %v, want the running etcd %p", again, err, e)
	}
	if _, err := c.Etcd(ctx, EtcdOptions{Members: 3}); err == nil {
		t.Error("asking for 3 members while 1 runs should fail")
	}
	m := e.Members()[0]
	if !strings.HasPrefix(m.DataDir(), c.TempDir()) {
		t.Errorf("data dir %s is not under the cluster's temp dir %s", m.DataDir(), c.TempDir())
	}
	if l, err := e.Leader(ctx); err != nil || l != m {
		t.Errorf("leader %v, %v", l, err)
	}
	// The cluster's leader (a fault's `servers: [leader]`) is etcd's.
	if l, err := c.Leader(ctx); err != nil || l.Name() != m.Name() {
		t.Errorf("cluster leader %v, %v", l, err)
	}
	checkEtcdLocked(t, ctx, e)
	// A value written must survive a crash.
	put(t, ctx, m, "key", "value")
	port := m.Addr()

	if err := m.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if state := procState(t, m.PID()); state != "T" {
		t.Errorf("paused member in state %q, want T", state)
	}
	if err := m.health(ctx); err == nil {
		t.Error("a paused member answers its health check")
	}
	if err := m.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.health(ctx); err != nil {
		t.Errorf("health after resume: %v", err)
	}

	if err := m.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if m.Running() || m.health(ctx) == nil {
		t.Fatal("killed member still answers")
	}
	if err := m.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if m.Addr() != port || m.health(ctx) != nil {
		t.Errorf("restart: addr %s (was %s), health %v", m.Addr(), port, m.health(ctx))
	}
	if got := rangeKey(t, ctx, m, "key"); got != "value" {
		t.Errorf("the value did not survive kill -9 and restart: %s", got)
	}

	// A paused member is still stopped by Close, and nothing is left.
	if err := m.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	logPath := m.LogPath()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if left := leakcheck.ProcessesUnder(tmp); len(left) > 0 {
		t.Errorf("left after Close: %v", left)
	}
	if left := leakcheck.TempDirsLeft(tmp); len(left) > 0 {
		t.Errorf("temp dirs left after Close: %v", left)
	}
	if filepath.Dir(logPath) == c.TempDir() {
		// The log lived in the temp dir (no LogDir): gone with it.
		if _, err := os.Stat(logPath); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("log %s: %v", logPath, err)
		}
	}
	if _, err := c.Etcd(ctx, EtcdOptions{}); !errors.Is(err, errClosed) {
		t.Errorf("etcd on a closed cluster: %v", err)
	}
}

// TestEtcdThree: three members elect one leader; with one member killed
// the other two keep a leader and serve; the killed member rejoins; Close
// stops all three, even with one paused.
func TestEtcdThree(t *testing.T) {
	requireEtcd(t)
	ctx := context.Background()
	tmp, logs := t.TempDir(), t.TempDir()
	c, err := New(Options{TempDir: tmp, LogDir: logs})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := c.Etcd(ctx, EtcdOptions{Members: 3})
	if err != nil {
		t.Fatal(err)
	}
	ms := e.Members()
	if len(ms) != 3 {
		t.Fatalf("%d members", len(ms))
	}
	seen := map[string]bool{}
	for _, m := range ms {
		for _, a := range []string{m.Addr(), m.peerAddr()} {
			if seen[a] {
				t.Errorf("address %s used twice", a)
			}
			seen[a] = true
		}
		if err := m.health(ctx); err != nil {
			t.Errorf("%s: %v", m.Name(), err)
		}
		if filepath.Dir(m.LogPath()) != logs {
			t.Errorf("%s logs to %s, not the log dir", m.Name(), m.LogPath())
		}
	}
	if n := len(leakcheck.ProcessesUnder(tmp)); n != 3 {
		t.Fatalf("leak check sees %d members, want 3", n)
	}
	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Every member follows the same leader.
	lid, _ := leader.id(ctx)
	for _, m := range ms {
		if st, err := m.status(ctx); err != nil || st.Leader != lid {
			t.Errorf("%s follows %x (%v), leader is %x", m.Name(), st.Leader, err, lid)
		}
	}
	// Kill the leader: the two left elect another and stay healthy.
	if err := leader.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	var rest []*EtcdMember
	for _, m := range ms {
		if m != leader {
			rest = append(rest, m)
		}
	}
	if err := waitUnit(ctx, rest[0].name, rest[0].p, rest[0].health); err != nil {
		t.Fatalf("the two members left have no leader: %v", err)
	}
	if l, err := e.Leader(ctx); err != nil || l == leader {
		t.Errorf("after killing the leader: leader %v, %v", l, err)
	}
	put(t, ctx, rest[0], "k3", "v")
	if err := leader.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	// The restarted member caught up with the write it missed.
	if err := leader.health(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rangeKey(t, ctx, leader, "k3"); got != "v" {
		t.Errorf("restarted member does not have the write made while it was down: %s", got)
	}
	// Close takes a few seconds here: the leader, told to stop, first
	// tries to hand its leadership to a member that is stopping too.
	if err := ms[1].Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if left := leakcheck.ProcessesUnder(tmp); len(left) > 0 {
		t.Errorf("left after Close: %v", left)
	}
	if left := leakcheck.TempDirsLeft(tmp); len(left) > 0 {
		t.Errorf("temp dirs left after Close: %v", left)
	}
}

func TestEtcdMissingBinaryNamesPackage(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	c, err := New(Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Etcd(context.Background(), EtcdOptions{})
	if !errors.Is(err, ErrMissingBinary) || !strings.Contains(err.Error(), "etcd-server") {
		t.Errorf("want ErrMissingBinary naming etcd-server, got %v", err)
	}
}

// put writes key=value on the member, with its credentials.
func put(t *testing.T, ctx context.Context, m *EtcdMember, key, value string) {
	t.Helper()
	cli, err := m.dial(true)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(ctx, key, value); err != nil {
		t.Fatalf("put: %v", err)
	}
}

// rangeKey reads key's value on the member ("" when missing).
func rangeKey(t *testing.T, ctx context.Context, m *EtcdMember, key string) string {
	t.Helper()
	cli, err := m.dial(true)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	r, err := cli.Get(ctx, key)
	if err != nil {
		t.Fatalf("range: %v", err)
	}
	if len(r.Kvs) == 0 {
		return ""
	}
	return string(r.Kvs[0].Value)
}

// etcdKeys lists every key on the member.
func etcdKeys(t *testing.T, m *EtcdMember) []string {
	t.Helper()
	cli, err := m.dial(true)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	r, err := cli.Get(context.Background(), "\x00", clientv3.WithFromKey(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range r.Kvs {
		out = append(out, string(kv.Key))
	}
	return out
}

// checkEtcdLocked: the run's etcd takes a put with the run's credentials
// only — not without a user, not with another password.
func checkEtcdLocked(t *testing.T, ctx context.Context, e *Etcd) {
	t.Helper()
	a := e.Members()[0].Auth()
	if a == nil || a.Username != etcdRootUser || len(a.Password) < 16 {
		t.Fatalf("the run's etcd has no password of its own: %+v", a)
	}
	for _, tc := range []struct {
		name, user, password string
		ok                   bool
	}{
		{"no user", "", "", false},
		{"a wrong password", etcdRootUser, "guess", false},
		{"the run's credentials", a.Username, a.Password, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := e.ClientConfig(e.Endpoints(), etcdCallTimeout)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Username, cfg.Password = tc.user, tc.password
			cli, err := clientv3.New(cfg)
			if err == nil {
				defer cli.Close()
				cctx, cancel := context.WithTimeout(ctx, etcdCallTimeout)
				_, err = cli.Put(cctx, "locked", "x")
				cancel()
			}
			if (err == nil) != tc.ok {
				t.Fatalf("put: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// TestEtcdTLS: with Options.TLS the members speak TLS only, with
// certificates of the run's CA, and ask for a client certificate and the
// run's password: the harness's client works; plain HTTP, and TLS
// without a client certificate, do not. The CA's files go with Close.
func TestEtcdTLS(t *testing.T) {
	requireEtcd(t)
	ctx := context.Background()
	c, err := New(Options{TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := c.Etcd(ctx, EtcdOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkEtcdLocked(t, ctx, e)
	m := e.Members()[0]
	if !strings.HasPrefix(m.clientURL(), "https://") {
		t.Errorf("client URL %s", m.clientURL())
	}
	put(t, ctx, m, "key", "value")
	if got := rangeKey(t, ctx, e.Members()[len(e.Members())-1], "key"); got != "value" {
		t.Errorf("read %q from the last member", got)
	}
	if _, err := httpClient.Get("http://" + m.Addr() + "/health"); err == nil {
		t.Error("the member answers plain HTTP")
	}
	a := m.Auth()
	noCert := &Auth{Username: a.Username, Password: a.Password, TLS: &TLSFiles{CA: a.TLS.CA}}
	stranger := newEtcdMember(program{name: "stranger", external: m.Addr(), auth: noCert})
	if err := stranger.health(ctx); err == nil {
		t.Error("the member answers TLS without a client certificate")
	}
	dir := filepath.Dir(a.TLS.CA)
	if !strings.HasPrefix(dir, c.TempDir()) {
		t.Errorf("the CA's files are in %s, not in the cluster's temp dir", dir)
	}
	if st, err := os.Stat(a.TLS.Key); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("client key: %v, %v", st, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the CA's files outlive the run: %v", err)
	}
}
