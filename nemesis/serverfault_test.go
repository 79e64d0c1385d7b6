package nemesis_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/nemesis"
)

// serverfault.go is what kill and server-pause share: their params
// (ServerParams), where they apply, their random params, and how they find
// their servers and undo a fault that could not finish. It is tested here
// with servers that no process stands behind; kill's and server-pause's
// own actions are in kill_test.go and serverpause_test.go. `servers:
// [leader]` is in members_test.go (TestServerFaultLeaderValidate) and
// kinds_test.go.

// serverFaults are the faults done to whole servers.
var serverFaults = []string{"kill", "server-pause"}

func serverParams(names ...string) *nemesis.ServerParams {
	return &nemesis.ServerParams{ServerSet: servers(names...)}
}

// TestServerParams: a fault done to servers needs servers; its `process:`
// is a client of the run; a name is not empty.
func TestServerParams(t *testing.T) {
	redis := nemesis.Shape{Clients: 2, Backend: "redis-token", Kinds: []string{"redis"}}
	withProc := serverParams("A")
	withProc.Proc = proc(1)
	badProc := serverParams("A")
	badProc.Proc = proc(2)
	checkValidate(t, []validateCase{
		{"a letter", redis, serverParams("A"), "", ""},
		{"a name and a letter", redis, serverParams("redis-0", "B"), "", ""},
		{"a process for the event", redis, withProc, "", ""},
		{"no servers", redis, serverParams(), "", "needs `servers:` (names, letters in start order: A, B, ..., or leader)"},
		{"an empty name", redis, serverParams("A", ""), "servers", "empty server name"},
		{"a process past the last", redis, badProc, "process", "no client process 2 (clients are 0 to 1)"},
	})
	for _, tc := range []struct {
		p    *nemesis.ServerParams
		want string
	}{
		{serverParams("C"), "servers [C]"},
		{withProc, "process 1, servers [A]"},
		{serverParams(), ""},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

// TestServerFaultsApply: a fault done to servers needs servers the
// harness controls.
func TestServerFaultsApply(t *testing.T) {
	for _, fault := range serverFaults {
		t.Run(fault, func(t *testing.T) {
			checkApplies(t, fault, serverParams("A"), []appliesCase{
				{"redis", nemesis.Shape{Clients: 1, Backend: "redis-token", Kinds: []string{"redis"}}, ""},
				{"someone else's with control", nemesis.Shape{Clients: 1, Backend: "redis-token", Kinds: []string{"redis"}, External: true}, ""},
				{"in-process", nemesis.Shape{Clients: 1, Backend: "mutex"}, fault + " does not apply to mutex: it has no server"},
				{"someone else's without control", nemesis.Shape{Clients: 1, Backend: "redis-token", Kinds: []string{"redis"}, External: true, Uncontrolled: []string{"redis 10.0.0.5:6379"}},
					fault + " does not apply: the servers are someone else's and the servers file gives no control for redis 10.0.0.5:6379"},
			})
		})
	}
}

// TestServerFaultsFindServers: a step's servers are found by name or by
// letter, once each; a server the run does not have is ErrTarget naming
// the servers it has, and nothing is done.
func TestServerFaultsFindServers(t *testing.T) {
	ctx := context.Background()
	for _, fault := range serverFaults {
		t.Run(fault, func(t *testing.T) {
			a := &fakeServer{name: "redis-0"}
			b := &fakeServer{name: "redis-1"}
			env := fakeEnv(t, 1, killable{a}, pausable{b})
			// Each fake can take one of the two faults: name the one that
			// can.
			target := map[string]string{"kill": "redis-0", "server-pause": "b"}[fault]
			val, heal, err := lookup(t, fault).Start(ctx, env, serverParams(target), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string][]string{"kill": {"A"}, "server-pause": {"B"}}[fault]
			if !reflect.DeepEqual(val["servers"], want) {
				t.Errorf("start value %v, want servers %v", val, want)
			}
			if _, err := heal(ctx); err != nil {
				t.Fatal(err)
			}
			before := len(a.Calls()) + len(b.Calls())
			_, heal, err = lookup(t, fault).Start(ctx, env, serverParams("C"), time.Second)
			if !errors.Is(err, nemesis.ErrTarget) || !strings.Contains(err.Error(), `no server "C" (servers: A=redis-0, B=redis-1)`) || heal != nil {
				t.Errorf("servers [C]: %v", err)
			}
			if after := len(a.Calls()) + len(b.Calls()); after != before {
				t.Errorf("a step naming a missing server acted: %v %v", a.Calls(), b.Calls())
			}
		})
	}
}

// TestServerFaultsRandomParams: a random server fault hits one server of
// the run, by letter, the same from the same seed.
func TestServerFaultsRandomParams(t *testing.T) {
	var ss []cluster.Server
	for _, n := range []string{"etcd-0", "etcd-1", "etcd-2"} {
		ss = append(ss, killable{&fakeServer{name: n}})
	}
	env := fakeEnv(t, 2, ss...)
	for _, fault := range serverFaults {
		seen := map[string]bool{}
		for _, p := range randomParams(t, fault, env, 3, 30) {
			sp, ok := p.(*nemesis.ServerParams)
			if !ok {
				t.Fatalf("%s: params %T", fault, p)
			}
			if len(sp.Servers) != 1 {
				t.Fatalf("%s: %v, want one server", fault, sp)
			}
			seen[sp.Servers[0]] = true
		}
		if !reflect.DeepEqual(seen, map[string]bool{"A": true, "B": true, "C": true}) {
			t.Errorf("%s: 30 random steps hit %v, want A, B and C", fault, seen)
		}
	}
	// No server: nothing to name (the step is refused by Validate).
	if p := lookup(t, "kill").RandomParams(rand.New(rand.NewPCG(1, 1)), fakeEnv(t, 1)).(*nemesis.ServerParams); len(p.Servers) != 0 {
		t.Errorf("no server, yet %v", p)
	}
}
