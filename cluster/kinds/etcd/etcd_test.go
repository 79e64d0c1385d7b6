package etcd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/external"
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
	c, err := cluster.New(cluster.Options{TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := Start(ctx, c, Options{})
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
	again, err := Start(ctx, c, Options{})
	if err != nil || again != e {
		t.Fatalf("second call: %p %v, want the running etcd %p", again, err, e)
	}
	if _, err := Start(ctx, c, Options{Ensemble: cluster.Ensemble{Members: 3}}); err == nil {
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
	// kill-session asks the etcd once, not each member: the cluster keeps
	// it as the kind's group.
	if ks := c.SessionKillers(); len(ks) != 1 || any(ks[0]) != any(e) {
		t.Errorf("session killers %v, want the etcd", ks)
	}
	checkEtcdLocked(t, ctx, e)
	// A value written must survive a crash.
	put(t, ctx, m, "key", "value")
	port := m.Addr()

	if err := m.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if state := testenv.ProcState(t, m.PID()); state != "T" {
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
	if _, err := Start(ctx, c, Options{}); !errors.Is(err, cluster.ErrClosed) {
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
	c, err := cluster.New(cluster.Options{TempDir: tmp, LogDir: logs})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := Start(ctx, c, Options{Ensemble: cluster.Ensemble{Members: 3}})
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
	var rest []*Member
	for _, m := range ms {
		if m != leader {
			rest = append(rest, m)
		}
	}
	if err := cluster.WaitUnit(ctx, rest[0].Name(), rest[0].Unit(), rest[0].health); err != nil {
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
	c, err := cluster.New(cluster.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = Start(context.Background(), c, Options{})
	if !errors.Is(err, cluster.ErrMissingBinary) || !strings.Contains(err.Error(), "etcd-server") {
		t.Errorf("want ErrMissingBinary naming etcd-server, got %v", err)
	}
}

// put writes key=value on the member, with its credentials.
func put(t *testing.T, ctx context.Context, m *Member, key, value string) {
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
func rangeKey(t *testing.T, ctx context.Context, m *Member, key string) string {
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
func etcdKeys(t *testing.T, m *Member) []string {
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
	ctx := context.Background()
	c, e := startEtcd(t, cluster.Options{TLS: true})
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
	noCert := &cluster.Auth{Username: a.Username, Password: a.Password, TLS: &cluster.TLSFiles{CA: a.TLS.CA}}
	stranger := endpointMember(cluster.Endpoint{Addr: m.Addr(), Auth: noCert})
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

// TestExternalCleanup: on an etcd someone else runs (the run's own,
// locked, named with its root user's password), a wrong password is
// refused in one line, and Cleanup removes the run's namespace alone —
// the owner's keys and another run's are still there.
func TestExternalCleanup(t *testing.T) {
	ctx := context.Background()
	_, e := startEtcd(t, cluster.Options{})
	t.Setenv("LT_TEST_ETCD_PW", e.Members()[0].Auth().Password)
	t.Setenv("LT_TEST_ETCD_WRONG", "guess")
	file := func(env string) *cluster.ServersFile {
		t.Helper()
		text := "etcd: [{addr: " + e.Endpoints()[0] + ", username: root, password_env: " + env + "}]\n"
		f, err := cluster.LoadServersFile(testenv.WriteFile(t, "s.yaml", text))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	kinds := []string{Kind}
	err := file("LT_TEST_ETCD_WRONG").Check(ctx, kinds, false)
	if want := "etcd " + e.Endpoints()[0] + ": refused: "; err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("a wrong etcd password: %v, want one line with %q", err, want)
	}
	f := file("LT_TEST_ETCD_PW")
	if err := f.Check(ctx, kinds, false); err != nil {
		t.Fatal(err)
	}
	ns := external.NewNamespace()
	m := e.Members()[0]
	put(t, ctx, m, "app/config", "v")
	put(t, ctx, m, "locktorture/lock/lt00000000:k0", "other run")
	if _, err := external.Prepare(ctx, f, ns, kinds); err != nil {
		t.Fatal(err)
	}
	put(t, ctx, m, "locktorture/lock/"+ns+":k0/694d", "")
	put(t, ctx, m, "locktorture/value/"+ns+":k1", "3")
	if err := external.Cleanup(ctx, f, ns, kinds); err != nil {
		t.Fatal(err)
	}
	keys := etcdKeys(t, m)
	if !slices.Contains(keys, "app/config") || !slices.Contains(keys, "locktorture/lock/lt00000000:k0") {
		t.Errorf("the owner's etcd keys are gone: %v", keys)
	}
	for _, k := range keys {
		if strings.Contains(k, ns) {
			t.Errorf("the run's etcd key %s is still there", k)
		}
	}
}

// startEtcd starts a one-member etcd on a cluster of opt's, closed when
// the test ends (it skips without etcd).
func startEtcd(t *testing.T, opt cluster.Options) (*cluster.Cluster, *Etcd) {
	t.Helper()
	requireEtcd(t)
	c, err := cluster.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	e, err := Start(context.Background(), c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c, e
}
