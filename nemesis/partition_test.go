package nemesis_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/nemesis"
)

// partition acts on links, proxies in front of real servers: its params,
// where it applies, its random params and the steps it refuses when it
// starts are tested here. Its cuts on real servers are TestNemeses
// "partition isolate-client" and "partition one-way"
// (runner/nemesis_test.go), the built-in partition scenarios
// (TestBuiltinScenarios, runner/builtin_test.go), a cut over TLS
// (runner/credentials_test.go), and its members topology
// TestPartitionMembersCutsLeader (members_test.go, with ZooKeeper).

func cut(topology string, clients []int, names ...string) *nemesis.PartitionParams {
	p := &nemesis.PartitionParams{ServerSet: servers(names...), Topology: topology}
	p.Clients = clients
	return p
}

// TestPartitionParams: a partition's topology and direction are ones it
// knows; replication needs Sentinel, and on someone else's servers a
// control of them; the clients are the run's.
func TestPartitionParams(t *testing.T) {
	redis := nemesis.Shape{Clients: 2, Backend: "redis-token", Kinds: []string{"redis"}}
	sentinel := redis
	sentinel.Sentinel = true
	theirs := sentinel
	theirs.External, theirs.Uncontrolled = true, []string{"redis 10.0.0.5:6379"}
	oneWay := cut("cut", []int{1}, "A")
	oneWay.Direction = "downstream"
	bad := cut("", []int{0})
	bad.Direction = "diagonal"
	checkValidate(t, []validateCase{
		{"isolate-client", redis, cut("isolate-client", []int{0}), "", ""},
		{"isolate-server", redis, cut("isolate-server", nil, "B"), "", ""},
		{"cut, one way", redis, oneWay, "", ""},
		{"halves", redis, cut("halves", nil), "", ""},
		{"ring", redis, cut("ring", nil), "", ""},
		{"no topology", redis, cut("", []int{0}, "A"), "", ""},
		{"replication over Sentinel", sentinel, cut("replication", nil), "", ""},
		{"an unknown topology", redis, cut("star", nil), "topology", `unknown topology "star" (isolate-client, isolate-server, cut, halves, ring, replication, members)`},
		{"an unknown direction", redis, bad, "direction", `bad direction "diagonal"`},
		{"replication without Sentinel", redis, cut("replication", nil), "topology", "topology replication needs `redis: sentinel`"},
		{"replication on someone else's servers", theirs, cut("replication", nil), "topology", "no control for redis 10.0.0.5:6379"},
		{"a client past the last", redis, cut("isolate-client", []int{5}), "clients", "no client process 5 (clients are 0 to 1)"},
		{"an empty server name", redis, cut("isolate-server", nil, ""), "servers", "empty server name"},
		// A partition that would cut nothing is refused before the run.
		{"isolate-client, no client", redis, cut("isolate-client", nil), "clients", "topology isolate-client cuts no link without clients"},
		{"isolate-server, no server", redis, cut("isolate-server", []int{0}), "servers", "topology isolate-server cuts no link without servers"},
		{"cut, no server", redis, cut("cut", []int{0}), "servers", "topology cut cuts no link without servers"},
		{"cut, no client", redis, cut("cut", nil, "A"), "clients", "topology cut cuts no link without clients"},
		{"no topology, nothing named", redis, cut("", nil), "servers", "a partition with neither clients nor servers"},
		{"no topology, servers alone", redis, cut("", nil, "A"), "", ""},
	})
	if got, want := oneWay.String(), "process 1, servers [A], topology cut, direction downstream"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	// The servers checked once they are up: all but the leader, which
	// only the members topology knows.
	for _, tc := range []struct {
		p    *nemesis.PartitionParams
		want []string
	}{
		{cut("isolate-server", nil, "A", "redis-1"), []string{"A", "redis-1"}},
		{cut(nemesis.TopologyMembers, nil, "leader", "B"), []string{"B"}},
	} {
		if got := tc.p.ServerNames(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v: ServerNames %v, want %v", tc.p, got, tc.want)
		}
	}
}

// TestPartitionApplies: a partition needs a server to cut a client from,
// and routes the run's traffic through links.
func TestPartitionApplies(t *testing.T) {
	checkApplies(t, "partition", cut("isolate-client", []int{0}), []appliesCase{
		{"etcd", nemesis.Shape{Clients: 1, Backend: "etcd", Kinds: []string{"etcd"}}, ""},
		{"someone else's servers", nemesis.Shape{Clients: 1, Backend: "redis-token", Kinds: []string{"redis"}, External: true, Uncontrolled: []string{"redis 10.0.0.5:6379"}}, ""},
		{"in-process", nemesis.Shape{Clients: 1, Backend: "mutex"}, "partition does not apply to mutex: it talks to no server"},
	})
	if !nemesis.UsesLinks([]nemesis.Step{{Fault: "pause"}, {Fault: "partition"}}, nil) {
		t.Error("a partition step does not ask for links")
	}
	if nemesis.UsesLinks([]nemesis.Step{{Fault: "pause"}, {Fault: "kill"}}, nil) {
		t.Error("pause and kill ask for links")
	}
}

// TestPartitionStartRefused: a partition that would cut nothing, or whose
// links, servers or Sentinel group are not there, is ErrTarget when it
// starts, not a silent no-op.
func TestPartitionStartRefused(t *testing.T) {
	env := fakeEnv(t, 2, &fakeServer{name: "redis-0"}, &fakeServer{name: "redis-1"})
	for _, tc := range []struct {
		name string
		p    *nemesis.PartitionParams
		want string
	}{
		{"isolate no client", cut("isolate-client", nil), "the partition cuts no link"},
		{"isolate-server naming none", cut("isolate-server", []int{0}), "the partition cuts no link (topology isolate-server over 2 clients and 2 servers)"},
		{"cut from no server", cut("cut", []int{0}), "the partition cuts no link (topology cut"},
		{"no links", cut("isolate-client", []int{0}), "links are not enabled"},
		{"no server C", cut("isolate-server", nil, "C"), `no server "C" (servers: A=redis-0, B=redis-1)`},
		{"no Sentinel", cut("replication", nil), "topology replication needs `redis: sentinel`"},
	} {
		_, heal, err := lookup(t, "partition").Start(context.Background(), env, tc.p, time.Second)
		if !errors.Is(err, nemesis.ErrTarget) || !strings.Contains(err.Error(), tc.want) || heal != nil {
			t.Errorf("%s: %v, want ErrTarget saying %q", tc.name, err, tc.want)
		}
	}
}

// TestPartitionRandomParams: with no ensemble of linked members, a random
// partition isolates a client, isolates a server, or cuts a client from
// a minority of the servers; every one validates and names servers the
// run has; the same seed draws the same.
func TestPartitionRandomParams(t *testing.T) {
	var ss []cluster.Server
	for _, n := range []string{"redis-0", "redis-1", "redis-2", "redis-3"} {
		ss = append(ss, &fakeServer{name: n})
	}
	env := fakeEnv(t, 3, ss...)
	shape := nemesis.Shape{Clients: 3, Backend: "redlock", Kinds: []string{"redis"}}
	seen := map[string]bool{}
	for _, p := range randomParams(t, "partition", env, 4, 60) {
		pt := p.(*nemesis.PartitionParams)
		if err := pt.Validate(shape); err != nil {
			t.Errorf("%v does not validate: %v", pt, err)
		}
		for _, s := range pt.Servers {
			if !slices.Contains([]string{"A", "B", "C", "D"}, s) {
				t.Errorf("%v names a server the run does not have", pt)
			}
		}
		switch pt.Topology {
		case "isolate-client":
			if len(pt.List()) != 1 || len(pt.Servers) != 0 {
				t.Errorf("%v: want one client", pt)
			}
		case "isolate-server":
			if len(pt.List()) != 0 || len(pt.Servers) != 1 {
				t.Errorf("%v: want one server", pt)
			}
		case "cut":
			// A minority of 4: 1 server (2 would be half).
			if len(pt.List()) != 1 || len(pt.Servers) != 1 {
				t.Errorf("%v: want one client from 1 of 4 servers", pt)
			}
		default:
			t.Errorf("%v: a topology a run without linked members cannot draw", pt)
		}
		seen[pt.Topology] = true
	}
	if len(seen) != 3 {
		t.Errorf("60 random partitions drew %v, want the three topologies", seen)
	}
}
