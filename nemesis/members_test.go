package nemesis_test

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/zookeeper"
	"github.com/locktorture/locktorture/internal/testenv"
	"github.com/locktorture/locktorture/nemesis"
)

// TestMembersTopologyValidate: the members topology of partition and
// latency is refused, before the run, where the servers cannot take it
// (no ensemble, etcd, someone else's servers) or the step names no member
// or names clients; it is accepted for a 3-member ZooKeeper.
func TestMembersTopologyValidate(t *testing.T) {
	zk3 := nemesis.Shape{Clients: 2, Backend: "zookeeper", Kinds: []string{"zookeeper"}, Members: 3}
	zk1 := nemesis.Shape{Clients: 2, Backend: "zookeeper", Kinds: []string{"zookeeper"}}
	etcd := nemesis.Shape{Clients: 2, Backend: "etcd", Kinds: []string{"etcd"}}
	ext := zk1
	ext.External = true
	redis := nemesis.Shape{Clients: 2, Backend: "redis-token", Kinds: []string{"redis"}}
	members := func(ss ...string) *nemesis.PartitionParams {
		return &nemesis.PartitionParams{ServerSet: servers(ss...), Topology: nemesis.TopologyMembers}
	}
	slow := func(ss ...string) *nemesis.LatencyParams {
		return &nemesis.LatencyParams{ServerSet: servers(ss...), Topology: nemesis.TopologyMembers, Latency: nemesis.Duration(time.Second)}
	}
	withClients := members("A")
	withClients.Clients = []int{1}
	withProcess := members("leader")
	withProcess.Proc = proc(0)
	for _, tc := range []struct {
		name    string
		shape   nemesis.Shape
		params  nemesis.Params
		wantKey string // "" and want "": accepted
		want    string
	}{
		{"zookeeper 3, a letter", zk3, members("A"), "", ""},
		{"zookeeper 3, the leader", zk3, members("leader"), "", ""},
		{"process picks the event only", zk3, withProcess, "", ""},
		{"latency, zookeeper 3", zk3, slow("C"), "", ""},
		{"no servers", zk3, members(), "servers", "needs `servers:`"},
		{"clients", zk3, withClients, "clients", "no `clients:`"},
		{"one member", zk1, members("A"), "topology", "zookeeper: {members: 3} (this run's ZooKeeper has one member)"},
		{"redis", redis, members("A"), "topology", "this run's servers: redis"},
		{"etcd", etcd, members("A"), "topology", "does not apply to etcd"},
		{"latency, etcd", etcd, slow("A"), "topology", "does not apply to etcd"},
		{"external", ext, members("A"), "topology", "someone else's members"},
		{"latency, unknown topology", zk3, &nemesis.LatencyParams{Topology: "ring", Latency: nemesis.Duration(time.Second)}, "topology", `unknown latency topology "ring"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.params.Validate(tc.shape)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, nemesis.ErrTarget) || nemesis.ErrorKey(err) != tc.wantKey || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v (key %q), want key %q and %q", err, nemesis.ErrorKey(err), tc.wantKey, tc.want)
			}
		})
	}
}

// TestServerFaultLeaderValidate: `servers: [leader]` of kill and
// server-pause is accepted where the run has an ensemble that elects a
// leader (etcd, ZooKeeper, one member or three) and refused before the
// run elsewhere; the leader is not among the names checked once the
// servers are up (it is found when the fault starts).
func TestServerFaultLeaderValidate(t *testing.T) {
	etcd := nemesis.Shape{Clients: 2, Backend: "etcd", Kinds: []string{"etcd"}}
	zk3 := nemesis.Shape{Clients: 2, Backend: "zookeeper", Kinds: []string{"zookeeper"}, Members: 3}
	redis := nemesis.Shape{Clients: 2, Backend: "redis-token", Kinds: []string{"redis"}}
	pg := nemesis.Shape{Clients: 2, Backend: "pg-advisory", Kinds: []string{"postgres"}}
	for _, tc := range []struct {
		name  string
		shape nemesis.Shape
		names []string
		want  string // "": accepted
	}{
		{"etcd", etcd, []string{"leader"}, ""},
		{"zookeeper", zk3, []string{"leader"}, ""},
		{"the leader and a letter", etcd, []string{"leader", "B"}, ""},
		{"redis", redis, []string{"leader"}, "redis-token runs on redis"},
		{"postgres", pg, []string{"leader"}, "pg-advisory runs on postgres"},
		{"a letter on redis", redis, []string{"A"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &nemesis.ServerParams{Proc: proc(0), ServerSet: servers(tc.names...)}
			err := p.Validate(tc.shape)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			} else if err == nil || !errors.Is(err, nemesis.ErrTarget) || nemesis.ErrorKey(err) != "servers" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v (key %q), want key servers and %q", err, nemesis.ErrorKey(err), tc.want)
			}
			for _, n := range p.ServerNames() {
				if n == "leader" {
					t.Errorf("ServerNames %v names the leader, which exists only when the fault starts", p.ServerNames())
				}
			}
		})
	}
}

// requireZooKeeper skips (fails under CI) without java and Debian's
// ZooKeeper.
func requireZooKeeper(t *testing.T) {
	t.Helper()
	testenv.Require(t, "java")
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
		testenv.Missing(t, "zookeeper (/usr/share/java/zookeeper.jar)")
	}
}

// TestPartitionMembersCutsLeader: `servers: [leader]` with topology
// members finds the leader when the fault starts, records it and the
// members it is cut from, and cuts it from them (it stops serving while
// the two others elect a leader between them); the heal brings it back as
// a follower. Naming every member, or a run without member links, is
// refused when the fault starts.
func TestPartitionMembersCutsLeader(t *testing.T) {
	requireZooKeeper(t)
	ctx := context.Background()
	f, err := nemesis.Lookup("partition")
	if err != nil {
		t.Fatal(err)
	}

	plain, err := cluster.New(cluster.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, _, err := f.Start(ctx, &nemesis.Env{Gates: gates(1), Cluster: plain}, &nemesis.PartitionParams{ServerSet: servers("A"), Topology: nemesis.TopologyMembers}, time.Second); !errors.Is(err, nemesis.ErrTarget) {
		t.Errorf("no ensemble: %v", err)
	}

	cl, err := cluster.New(cluster.Options{TempDir: t.TempDir(), LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cl.EnableLinks()
	z, err := zookeeper.Start(ctx, cl, zookeeper.Options{Ensemble: cluster.Ensemble{Members: 3}})
	if err != nil {
		t.Fatal(err)
	}
	env := &nemesis.Env{Gates: gates(1), Cluster: cl}
	if _, _, err := f.Start(ctx, env, &nemesis.PartitionParams{ServerSet: servers("A", "B", "C"), Topology: nemesis.TopologyMembers}, time.Second); !errors.Is(err, nemesis.ErrTarget) {
		t.Errorf("every member named: %v", err)
	}
	leader, err := z.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	letter := cl.Label(leader)
	var others []string
	for _, m := range z.Members() {
		if m != leader {
			others = append(others, cl.Label(m))
		}
	}
	val, heal, err := f.Start(ctx, env, &nemesis.PartitionParams{ServerSet: servers("leader"), Topology: nemesis.TopologyMembers}, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"topology": "members", "leader": letter, "cut": map[string][]string{letter: others}, "direction": "both", "ms": int64(2000)}
	if !reflect.DeepEqual(val, want) {
		t.Errorf("start value %v, want %v", val, want)
	}
	cut := time.Now()
	waitFor(t, "a new leader among the others", func() bool {
		l, err := z.Leader(ctx)
		return err == nil && l != leader
	})
	t.Logf("a new leader %v after the cut", time.Since(cut).Round(time.Millisecond))
	if _, err := leader.Mode(ctx); err == nil {
		t.Error("the cut leader still serves")
	}
	if _, err := heal(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the old leader to follow", func() bool {
		mode, err := leader.Mode(ctx)
		return err == nil && mode == "follower"
	})
}
