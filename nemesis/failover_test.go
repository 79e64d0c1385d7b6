package nemesis_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/nemesis"
)

// failover needs a Sentinel group of real Redis servers to act on: its
// params, where it applies, its names and its refusal without Sentinel are
// tested here; a failover itself is TestBuiltinScenarios/failover
// (runner/builtin_test.go), the failover of a program's lock
// (runner/renewal_test.go) and of one in Docker (runner/docker_test.go).

func failoverBy(force bool, p ...int) *nemesis.FailoverParams {
	fp := &nemesis.FailoverParams{Force: force}
	if len(p) > 0 {
		fp.Proc = proc(p[0])
	}
	return fp
}

// TestFailoverParams: the process that fires it is the run's; the plan
// line says forced.
func TestFailoverParams(t *testing.T) {
	sentinel := nemesis.Shape{Clients: 2, Backend: "redis-token", Kinds: []string{"redis"}, Sentinel: true}
	checkValidate(t, []validateCase{
		{"on any client's event", sentinel, failoverBy(false), "", ""},
		{"forced, on client 1's", sentinel, failoverBy(true, 1), "", ""},
		{"a process past the last", sentinel, failoverBy(false, 2), "process", "no client process 2 (clients are 0 to 1)"},
	})
	for _, tc := range []struct {
		p    *nemesis.FailoverParams
		want string
	}{
		{failoverBy(false), ""},
		{failoverBy(true), "forced"},
		{failoverBy(false, 0), "process 0"},
		{failoverBy(true, 0), "process 0 forced"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
	p, err := decode(t, "failover", "process: 1\nforce: true\n")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, failoverBy(true, 1)) {
		t.Errorf("decoded %+v", p)
	}
}

// TestFailoverApplies: failover needs Redis under Sentinel, on servers
// the harness controls.
func TestFailoverApplies(t *testing.T) {
	checkApplies(t, "failover", failoverBy(false), []appliesCase{
		{"redis over Sentinel", nemesis.Shape{Clients: 1, Backend: "redis-token", Kinds: []string{"redis", "sentinel"}, Sentinel: true}, ""},
		{"redis alone", nemesis.Shape{Clients: 1, Backend: "redis-token", Kinds: []string{"redis"}}, "failover needs `redis: sentinel`"},
		{"etcd", nemesis.Shape{Clients: 1, Backend: "etcd", Kinds: []string{"etcd"}}, "failover does not apply to etcd: it needs Redis with Sentinel"},
		{"in-process", nemesis.Shape{Clients: 1, Backend: "mutex"}, "failover does not apply to mutex"},
		{"someone else's without control", nemesis.Shape{Clients: 1, Backend: "redis-token", Kinds: []string{"redis"}, Sentinel: true, External: true, Uncontrolled: []string{"redis 10.0.0.5:6379"}}, "failover does not apply: the servers are someone else's"},
	})
}

// TestFailoverNames: a failover is recorded as failover, then restart (of
// the old primary); it lasts (the old primary stays down for `for:`), and
// it routes traffic through links.
func TestFailoverNames(t *testing.T) {
	if start, stop := opNames(t, "failover"); start != "failover" || stop != "restart" {
		t.Errorf("ops %q, %q, want failover, restart", start, stop)
	}
	if allowsZero(t, "failover") {
		t.Error("a failover of no time is allowed")
	}
	if !nemesis.UsesLinks([]nemesis.Step{{Fault: "failover"}}, nil) {
		t.Error("a failover step does not ask for links")
	}
}

// TestFailoverStartWithoutSentinel: a run with Redis but no Sentinel group
// is ErrTarget, and nothing is killed.
func TestFailoverStartWithoutSentinel(t *testing.T) {
	s := &fakeServer{name: "redis-0"}
	env := fakeEnv(t, 1, killable{s})
	_, heal, err := lookup(t, "failover").Start(context.Background(), env, failoverBy(true), time.Second)
	if !errors.Is(err, nemesis.ErrTarget) || !strings.Contains(err.Error(), "failover needs `redis: sentinel`") || heal != nil {
		t.Errorf("Start: %v, want ErrTarget", err)
	}
	if got := s.Calls(); got != nil {
		t.Errorf("a server was acted on: %v", got)
	}
}

// TestFailoverRandomParams: a random failover waits for Sentinel's own
// election (not forced) and is fired by any client.
func TestFailoverRandomParams(t *testing.T) {
	for _, p := range randomParams(t, "failover", fakeEnv(t, 2), 1, 5) {
		if !reflect.DeepEqual(p, failoverBy(false)) {
			t.Errorf("random params %+v, want none", p)
		}
	}
}
