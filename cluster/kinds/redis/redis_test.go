package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/external"
	// TestServersFileCheck's files name etcd and ZooKeeper servers too.
	_ "github.com/locktorture/locktorture/cluster/kinds/etcd"
	_ "github.com/locktorture/locktorture/cluster/kinds/zookeeper"
	"github.com/locktorture/locktorture/cluster/links"
	"github.com/locktorture/locktorture/internal/journal"
	"github.com/locktorture/locktorture/internal/leakcheck"
	"github.com/locktorture/locktorture/internal/testenv"
)

func TestRedisLifecycle(t *testing.T) {
	testenv.Require(t, "redis-server")
	ctx := context.Background()
	tmp := t.TempDir()
	c, err := cluster.New(cluster.Options{TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := Start(ctx, c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Leader(ctx); err == nil || !strings.Contains(err.Error(), "no ensemble with a leader") {
		t.Errorf("a Redis run's leader: %v, want none", err)
	}
	// The leak check sees a running server (so its silence later means something).
	if len(leakcheck.ProcessesUnder(tmp)) != 1 {
		t.Fatalf("leak check does not see the server: %v", leakcheck.ProcessesUnder(tmp))
	}
	if err := r.ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	port := r.Port()

	if err := r.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if state := testenv.ProcState(t, r.PID()); state != "T" {
		t.Errorf("paused server in state %q, want T", state)
	}
	if err := r.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.ping(ctx); err != nil {
		t.Errorf("ping after resume: %v", err)
	}

	if err := r.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if r.Running() || r.ping(ctx) == nil {
		t.Fatal("killed server still answers")
	}
	if err := r.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if r.Port() != port || r.ping(ctx) != nil {
		t.Errorf("restart: port %d (was %d), ping %v", r.Port(), port, r.ping(ctx))
	}

	// A paused server is still stopped by Close.
	if err := r.Pause(ctx); err != nil {
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
	if _, err := Start(ctx, c, Options{}); !errors.Is(err, cluster.ErrClosed) {
		t.Errorf("start on a closed cluster: %v", err)
	}
}

func TestMissingBinaryNamesPackage(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	c, err := cluster.New(cluster.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = Start(context.Background(), c, Options{})
	if !errors.Is(err, cluster.ErrMissingBinary) {
		t.Fatalf("want cluster.ErrMissingBinary, got %v", err)
	}
	if want := "install the Debian package redis-server"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

// TestExternalCleanupTouchesOnlyTheRun: on servers someone else runs, the
// run's namespace is all that Cleanup removes — the owner's keys, another
// run's keys are all still there (etcd's, PostgreSQL's and ZooKeeper's:
// their packages' TestExternalCleanup).
func TestExternalCleanupTouchesOnlyTheRun(t *testing.T) {
	testenv.Require(t, "redis-server")
	ctx := context.Background()
	c, err := cluster.New(cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := Start(ctx, c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{"redis"}
	f, err := cluster.LoadServersFile(testenv.WriteFile(t, "s.yaml", string(fmt.Appendf(nil, "redis: [%s]\n", r.Addr()))))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Check(ctx, kinds, false); err != nil {
		t.Fatal(err)
	}
	ns := external.NewNamespace()
	// The owner's data, and another run's, before the run.
	theirs := []string{"user:1", "locktorture:lock:k0", "locktorture:lock:lt00000000:k0", "k0", ns + "-not-a-key"}
	for _, k := range theirs {
		mustRedis(t, r.Addr(), "SET", k, "mine")
	}
	if _, err := external.Prepare(ctx, f, ns, kinds); err != nil {
		t.Fatal(err)
	}
	// The run's data: keys of its backends and resources.
	ours := []string{"locktorture:lock:" + ns + ":k0", "locktorture:fence:" + ns + ":k12"}
	for _, k := range ours {
		mustRedis(t, r.Addr(), "SET", k, "run")
	}

	if err := external.Cleanup(ctx, f, ns, kinds); err != nil {
		t.Fatal(err)
	}
	for _, k := range ours {
		if v, _ := redisCall(ctx, endpoint(r), "EXISTS", k); v != int64(0) {
			t.Errorf("the run's key %s is still there", k)
		}
	}
	for _, k := range theirs {
		if v, _ := redisCall(ctx, endpoint(r), "GET", k); v != "mine" {
			t.Errorf("the owner's key %s is gone (%v)", k, v)
		}
	}
}

func mustRedis(t *testing.T, addr string, args ...string) {
	t.Helper()
	if _, err := redisCall(context.Background(), cluster.Endpoint{Addr: addr}, args...); err != nil {
		t.Fatal(err)
	}
}

func TestLinks(t *testing.T) {
	testenv.Require(t, "redis-server")
	ctx := context.Background()
	c, err := cluster.New(cluster.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := Start(ctx, c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ClientAddr(0, r); got != r.Addr() {
		t.Fatalf("without links a client dials the server: %s, want %s", got, r.Addr())
	}
	c.EnableLinks()
	a0, a1 := c.ClientAddr(0, r), c.ClientAddr(1, r)
	if a0 == r.Addr() || a0 == a1 || c.ClientAddr(0, r) != a0 {
		t.Fatalf("want one link per (client, server): p0 %s, p1 %s, server %s", a0, a1, r.Addr())
	}
	if err := pingRedis(ctx, cluster.Endpoint{Addr: a0}); err != nil {
		t.Fatalf("ping through the link: %v", err)
	}
	l, _ := c.Link(links.ClientName(0), r)

	// A cut link is silent: the connection opens, nothing comes back.
	h, err := l.Cut(ctx, links.BothWays)
	if err != nil {
		t.Fatal(err)
	}
	if err := pingRedis(ctx, cluster.Endpoint{Addr: a0}); err == nil {
		t.Error("ping got through a cut link")
	}
	if err := pingRedis(ctx, cluster.Endpoint{Addr: a1}); err != nil {
		t.Errorf("the other client's link should be whole: %v", err)
	}
	if err := l.Heal(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := pingRedis(ctx, cluster.Endpoint{Addr: a0}); err != nil {
		t.Errorf("ping after heal: %v", err)
	}

	// Replies held 300ms.
	h, err = l.Delay(ctx, links.Downstream, 300, 0)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := pingDeadline(ctx, a0, 5*time.Second); err != nil {
		t.Fatalf("ping through a slow link: %v", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("the reply came back in %s, before the 300ms delay", d)
	}
	_ = l.Heal(ctx, h)

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if conn, err := net.DialTimeout("tcp", a0, time.Second); err == nil {
		conn.Close()
		t.Errorf("link %s still listens after Close", a0)
	}
}

// pingDeadline is pingRedis with a longer read deadline.
func pingDeadline(ctx context.Context, addr string, d time.Duration) error {
	conn, err := net.DialTimeout("tcp", addr, d)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(d))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 7)
	_, err = conn.Read(buf)
	return err
}

// TestUndoRedisConfig: the replication cut's journaled undo gives a Redis
// its own masterauth back when replayed (a harness killed mid-failover).
func TestUndoRedisConfig(t *testing.T) {
	testenv.Require(t, "redis-server")
	// A server that asks for a password: the undo reads it again from the
	// variable the servers file named, never from the journal.
	c, err := cluster.New(cluster.Options{TempDir: t.TempDir(), Locked: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := Start(context.Background(), c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := redisCall(ctx, endpoint(r), "CONFIG", "SET", "masterauth", "owners-secret"); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Create(t.TempDir(), "dead", "run")
	if err != nil {
		t.Fatal(err)
	}
	auth := *cluster.AuthOf(r)
	auth.PasswordEnv = "LT_UNDO_TEST_PW"
	t.Setenv(auth.PasswordEnv, auth.Password)
	if _, err := j.Add(journal.Action{Kind: undoRedisConfig, Args: auth.JournalArgs(map[string]string{"addr": r.Addr(), "param": "masterauth", "value": "owners-secret"})}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(j.Path()); err != nil || strings.Contains(string(b), auth.Password) {
		t.Errorf("the journal holds the server's password (%v)", err)
	}
	if _, err := redisCall(ctx, endpoint(r), "CONFIG", "SET", "masterauth", "locktorture-cut-x"); err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Replay(ctx, j.Path()); err != nil {
		t.Fatal(err)
	}
	v, err := redisCall(ctx, endpoint(r), "CONFIG", "GET", "masterauth")
	if l := asList(v); err != nil || len(l) != 2 || l[1] != "owners-secret" {
		t.Errorf("masterauth %v (%v), want the owner's back", v, err)
	}
}

// TestServersFileCheck: servers that answer and are what the file says
// pass; a replica named as a primary, a silent address and an unknown
// Sentinel master are each refused, naming the server.
func TestServersFileCheck(t *testing.T) {
	testenv.Require(t, "redis-server", "redis-sentinel")
	c, err := cluster.New(cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	g, err := StartSentinelGroup(ctx, c, false)
	if err != nil {
		t.Fatal(err)
	}
	primary, replica := g.Primary.Addr(), g.Replica.Addr()
	port, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	silent := "127.0.0.1:" + strconv.Itoa(port)
	tests := []struct {
		name     string
		file     string
		kinds    []string
		sentinel bool
		has      string // "" = passes
	}{
		{"a primary", "redis: [" + primary + "]\n", []string{"redis"}, false, ""},
		{"a replica named as a primary", "redis: [" + replica + "]\n", []string{"redis"}, false, "redis " + replica + ": it is a slave, not a primary"},
		{"nobody listens", "redis: [" + silent + "]\n", []string{"redis"}, false, "redis " + silent},
		{"no redis for a redis backend", "etcd: [" + silent + "]\n", []string{"redis"}, false, "names none"},
		{"the sentinel group", "sentinel: {master: " + sentinelMaster + ", addrs: [" + strings.Join(g.SentinelAddrs(), ", ") + "]}\n", []string{"redis"}, true, ""},
		{"an unknown master", "sentinel: {master: nobody, addrs: [" + g.SentinelAddrs()[0] + "]}\n", []string{"redis"}, true, `does not know a master named "nobody"`},
		{"kinds the run does not use are not asked", "redis: [" + primary + "]\netcd: [" + silent + "]\n", []string{"redis"}, false, ""},
		{"a Redis named as ZooKeeper", "zookeeper: [" + primary + "]\n", []string{"zookeeper"}, false, "zookeeper " + primary + ": it does not answer as a ZooKeeper server"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := cluster.LoadServersFile(testenv.WriteFile(t, "s.yaml", string([]byte(tc.file))))
			if err != nil {
				t.Fatal(err)
			}
			err = f.Check(ctx, tc.kinds, tc.sentinel)
			if tc.has == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, cluster.ErrServerCheck) || !strings.Contains(err.Error(), tc.has) {
				t.Fatalf("Check = %v, want cluster.ErrServerCheck naming %q", err, tc.has)
			}
		})
	}
}

// testProgramKind is a kind registered by this test alone: redis-server
// run as a kind of its own, the way a new kind's one file adds itself.
const testProgramKind = "test-redis"

func init() {
	cluster.RegisterKind(cluster.Kind{
		Name: testProgramKind, Packages: []string{"redis-server"}, Image: "redis:7.4",
		Program: &cluster.ProgramSpec{
			Program: "redis-server", Package: "redis-server", Port: 6379,
			Args: func(host string, port int, dir string) []string {
				return redisArgs(host, port, dir, Options{})
			},
			Ready: func(ctx context.Context, a string) error { return pingRedis(ctx, cluster.Endpoint{Addr: a}) },
			Version: func(ctx context.Context, addr string) (string, error) {
				s := cluster.NewFaultable(testProgramKind, testProgramKind)
				s.SetExternal(addr)
				return redisVersion(ctx, &s)
			},
		},
		Abilities: testKind{},
	})
}

// testKind is what the test kind can do beyond starting: check a
// server someone else runs, and clean a run's keys off it, as redis does.
type testKind struct{}

func (testKind) Check(ctx context.Context, e cluster.Endpoint) error {
	return checkRedisPrimary(ctx, e)
}

func (testKind) Cleanup(ctx context.Context, servers []cluster.Endpoint, namespace string) error {
	return cleanupRedis(ctx, servers, namespace)
}

// TestAKindIsOneFile: a kind registered from one file is started, asked
// its version, killed and restarted, given to clients, accepted by images
// and servers files, checked, and handed out as a server someone else
// runs — with nothing else written for it.
func TestAKindIsOneFile(t *testing.T) {
	testenv.Require(t, "redis-server")
	ctx := context.Background()
	if !slices.Contains(cluster.KindNames(), testProgramKind) {
		t.Fatalf("cluster.KindNames() = %v, want %s", cluster.KindNames(), testProgramKind)
	}
	c, err := cluster.New(cluster.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.StartKind(ctx, testProgramKind, cluster.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	s := c.Servers()[0]
	if v, err := c.ServerVersion(ctx, s); err != nil || v == "" {
		t.Fatalf("version: %q, %v", v, err)
	}
	k, ok := s.(cluster.Killer)
	if !ok {
		t.Fatal("a program is not a Killer")
	}
	if err := k.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := k.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.ClientServers(0).Addrs(testProgramKind); len(got) != 1 || got[0] != s.Addr() {
		t.Fatalf("client servers of %s: %v, want [%s]", testProgramKind, got, s.Addr())
	}
	if err := cluster.CheckImages(map[string]string{testProgramKind: "redis:7.4"}); err != nil {
		t.Fatal(err)
	}
	f, err := cluster.LoadServersFile(testenv.WriteFile(t, "s.yaml", string([]byte(testProgramKind+": ["+s.Addr()+"]\n"))))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Check(ctx, []string{testProgramKind}, false); err != nil {
		t.Fatal(err)
	}
	g, err := external.Prepare(ctx, f, "ltkind", []string{testProgramKind})
	if err != nil {
		t.Fatal(err)
	}
	// As if the servers file said "control: docker" for it: a fault could
	// act on the container, but its log is still its owner's.
	g.Controls = map[string]string{s.Addr(): "ltkind-not-a-container"}
	ext := cluster.NewExternal(g)
	if err := ext.StartKind(ctx, testProgramKind, cluster.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := ext.Servers(); len(got) != 1 || got[0].Addr() != s.Addr() || got[0].(cluster.Kinded).Kind() != testProgramKind {
		t.Fatalf("the external cluster handed out %v", got)
	}
	if logs := ext.Logs(); len(logs) != 0 {
		t.Errorf("server logs %q for a server someone else runs, want none", logs)
	}
	if err := ext.StartKind(ctx, testProgramKind, cluster.StartOptions{}); err == nil {
		t.Fatal("a second server was handed out, but one was external")
	}
	if err := external.Cleanup(ctx, f, "ltkind", []string{testProgramKind}); err != nil {
		t.Fatal(err)
	}
}
