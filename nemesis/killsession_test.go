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

// kill-session asks the run's servers to end sessions (cluster's
// SessionKillers): what it asks, records and refuses is tested here with
// servers that no process stands behind. How each kind ends a real session
// is its kind package's test (cluster/kinds/*); the fault on real servers
// is TestBuiltinScenarios/kill-session, mysql-kill and mysql-for-update-kill
// (runner/builtin_test.go) and a program's lock (runner/renewal_test.go).
// Which kinds it applies to is TestKindsFromRegistry (kinds_test.go).

// TestKillSessionNames: kill-session is one op, with nothing to heal; it
// may last no time; its params are terminate's (the clients, or every
// holder).
func TestKillSessionNames(t *testing.T) {
	if start, stop := opNames(t, "kill-session"); start != "kill-session" || stop != "" {
		t.Errorf("ops %q, %q, want kill-session alone", start, stop)
	}
	if !allowsZero(t, "kill-session") {
		t.Error("kill-session with `for: 0s` is refused")
	}
	if p := lookup(t, "kill-session").Params(); !reflect.DeepEqual(p, terminateOf()) {
		t.Errorf("params %#v, want terminate's", p)
	}
	for _, p := range randomParams(t, "kill-session", fakeEnv(t, 2), 1, 5) {
		if !reflect.DeepEqual(p, terminateOf()) {
			t.Errorf("random params %+v, want every holder", p)
		}
	}
}

// TestKillSessionApplies: on servers the harness does not control, no
// session is ended.
func TestKillSessionApplies(t *testing.T) {
	checkApplies(t, "kill-session", terminateOf(0), []appliesCase{
		{"redis", nemesis.Shape{Clients: 1, Backend: "redis-token", Kinds: []string{"redis"}}, ""},
		{"in-process", nemesis.Shape{Clients: 1, Backend: "mutex"}, "kill-session does not apply to mutex: it has no server session"},
		{"someone else's without control", nemesis.Shape{Clients: 1, Backend: "redis-token", Kinds: []string{"redis"}, External: true, Uncontrolled: []string{"redis 10.0.0.5:6379"}}, "kill-session does not apply: the servers are someone else's"},
	})
}

// TestKillSessionStart: kill-session asks every server that ends sessions
// for the target clients' (none named: every holder's), records what each
// ended in start order, and says which clients it aimed at; a server's
// error fails the step, named; a run whose servers end no session is
// ErrTarget.
func TestKillSessionStart(t *testing.T) {
	ctx := context.Background()
	var asked [][]int
	a := sessionServer{fakeServer: &fakeServer{name: "redis-0"}, asked: &asked,
		sessions: []map[string]any{{"client": "p1", "killed": true}}}
	b := sessionServer{fakeServer: &fakeServer{name: "redis-1"}, asked: &asked,
		sessions: []map[string]any{{"client": "p1", "killed": false}, {"client": "p2", "killed": true}}}
	env := fakeEnv(t, 3, a, &fakeServer{name: "sentinel-0"}, b)
	f := lookup(t, "kill-session")

	val, heal, err := f.Start(ctx, env, terminateOf(1, 2), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"clients": []int{1, 2}, "sessions": append(append([]map[string]any{}, a.sessions...), b.sessions...)}
	if !reflect.DeepEqual(val, want) {
		t.Errorf("start value %v\nwant %v", val, want)
	}
	if !reflect.DeepEqual(asked, [][]int{{1, 2}, {1, 2}}) {
		t.Errorf("servers asked for %v, want [1 2] of each", asked)
	}
	if hv, err := heal(ctx); hv != nil || err != nil {
		t.Errorf("heal: %v, %v, want nothing", hv, err)
	}

	asked = nil
	val, _, err = f.Start(ctx, env, terminateOf(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := val["clients"]; ok || !reflect.DeepEqual(asked, [][]int{nil, nil}) {
		t.Errorf("every holder: value %v, asked %v", val, asked)
	}

	failing := b
	failing.err = errors.New("CLIENT KILL: connection refused")
	env = fakeEnv(t, 3, a, failing)
	if _, heal, err := f.Start(ctx, env, terminateOf(), 0); err == nil || !strings.Contains(err.Error(), "kill-session: CLIENT KILL: connection refused") || heal != nil {
		t.Errorf("a server's error: %v", err)
	}

	env = fakeEnv(t, 1, &fakeServer{name: "pgbouncer"})
	if _, heal, err := f.Start(ctx, env, terminateOf(), time.Second); !errors.Is(err, nemesis.ErrTarget) || heal != nil {
		t.Errorf("no server ends sessions: %v, want ErrTarget", err)
	}
}
