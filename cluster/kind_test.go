package cluster

import (
	"context"
	"slices"
	"testing"

	"github.com/locktorture/locktorture/internal/testenv"
)

// testProgramKind is a kind registered by this test alone: redis-server
// run as a kind of its own, the way a new kind's one file adds itself.
const testProgramKind = "test-redis"

func init() {
	RegisterKind(Kind{
		Name: testProgramKind, Packages: []string{"redis-server"}, Image: "redis:7.4",
		Program: &ProgramSpec{
			Program: "redis-server", Package: "redis-server", Port: 6379,
			Args: func(host string, port int, dir string) []string {
				return redisArgs(host, port, dir, RedisOptions{})
			},
			Ready: func(ctx context.Context, a string) error { return pingRedis(ctx, Endpoint{Addr: a}) },
			Version: func(ctx context.Context, addr string) (string, error) {
				return redisVersion(ctx, externalServer{testProgramKind, addr})
			},
		},
		Check:   checkRedisPrimary,
		Cleanup: cleanupRedis,
	})
}

// TestAKindIsOneFile: a kind registered from one file is started, asked
// its version, killed and restarted, given to clients, accepted by images
// and servers files, checked, and handed out as a server someone else
// runs — with nothing else written for it.
func TestAKindIsOneFile(t *testing.T) {
	testenv.Require(t, "redis-server")
	ctx := context.Background()
	if !slices.Contains(KindNames(), testProgramKind) {
		t.Fatalf("KindNames() = %v, want %s", KindNames(), testProgramKind)
	}
	c, err := New(Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.StartKind(ctx, testProgramKind, StartOptions{}); err != nil {
		t.Fatal(err)
	}
	s := c.Servers()[0]
	if v, err := c.ServerVersion(ctx, s); err != nil || v == "" {
		t.Fatalf("version: %q, %v", v, err)
	}
	k, ok := s.(Killer)
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
	if err := CheckImages(map[string]string{testProgramKind: "redis:7.4"}); err != nil {
		t.Fatal(err)
	}
	f, err := parseServersFile([]byte(testProgramKind+": ["+s.Addr()+"]\n"), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Check(ctx, []string{testProgramKind}, false); err != nil {
		t.Fatal(err)
	}
	g, err := f.Prepare(ctx, "ltkind", []string{testProgramKind})
	if err != nil {
		t.Fatal(err)
	}
	// As if the servers file said "control: docker" for it: a fault could
	// act on the container, but its log is still its owner's.
	g.Controls = map[string]string{s.Addr(): "ltkind-not-a-container"}
	ext := NewExternal(g)
	if err := ext.StartKind(ctx, testProgramKind, StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := ext.Servers(); len(got) != 1 || got[0].Addr() != s.Addr() || kindOf(got[0]) != testProgramKind {
		t.Fatalf("the external cluster handed out %v", got)
	}
	if logs := ext.Logs(); len(logs) != 0 {
		t.Errorf("server logs %q for a server someone else runs, want none", logs)
	}
	if err := ext.StartKind(ctx, testProgramKind, StartOptions{}); err == nil {
		t.Fatal("a second server was handed out, but one was external")
	}
	if err := f.Cleanup(ctx, "ltkind", []string{testProgramKind}); err != nil {
		t.Fatal(err)
	}
}

// TestServerKind: a server's name says its kind, a companion's (a
// Sentinel) its kind's, a kind whose name holds a '-' included; a name of
// no registered kind says none.
func TestServerKind(t *testing.T) {
	want := map[string]string{ // a server's name: its kind
		"redis-0": "redis", "redis": "redis", "sentinel-2": "redis",
		"postgres": "postgres", "pgbouncer": "pgbouncer",
		"etcd-1": "etcd", "etcd1": "etcd", "zookeeper-0": "zookeeper",
		"redisish": "", "mystery-0": "", "": "",
		testProgramKind + "-0": testProgramKind,
	}
	for name, kind := range want {
		got, ok := ServerKind(name)
		if got != kind || ok != (kind != "") {
			t.Errorf("ServerKind(%q) = %q, %v; want %q", name, got, ok, kind)
		}
	}
}
