package nemesis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/nemesis"
)

// terminate needs a real PostgreSQL to end sessions on: its params, where
// it applies, its names, its Idle and its refusal without PostgreSQL are
// tested here; a terminate itself is TestBuiltinScenarios/pg-terminate and
// pg-terminate-xact (runner/builtin_test.go), and what a terminated
// holder's session does is runner/backends_pg_test.go's. What Idle says,
// word for word, is TestSessionsIdle's (idle_test.go).

func terminateOf(clients ...int) *nemesis.TerminateParams {
	p := &nemesis.TerminateParams{}
	p.Clients = clients
	return p
}

// TestTerminateParams: the clients are the run's; none is every holder.
func TestTerminateParams(t *testing.T) {
	pg := nemesis.Shape{Clients: 3, Backend: "pg-advisory", Kinds: []string{"postgres"}}
	checkValidate(t, []validateCase{
		{"every holder", pg, terminateOf(), "", ""},
		{"two clients", pg, terminateOf(0, 2), "", ""},
		{"a client past the last", pg, terminateOf(3), "clients", "no client process 3 (clients are 0 to 2)"},
	})
	for _, tc := range []struct {
		p    *nemesis.TerminateParams
		want string
	}{
		{terminateOf(), ""},
		{terminateOf(1), "process 1"},
		{terminateOf(0, 2, 0), "processes [0 2]"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

// TestTerminateApplies: terminate needs a PostgreSQL session, direct or
// through PgBouncer.
func TestTerminateApplies(t *testing.T) {
	checkApplies(t, "terminate", terminateOf(), []appliesCase{
		{"postgres", nemesis.Shape{Clients: 1, Backend: "pg-advisory", Kinds: []string{"postgres"}}, ""},
		{"postgres behind pgbouncer", nemesis.Shape{Clients: 1, Backend: "pg-advisory", Kinds: []string{"postgres", "pgbouncer"}}, ""},
		{"mariadb", nemesis.Shape{Clients: 1, Backend: "mysql-get-lock", Kinds: []string{"mariadb"}}, "terminate does not apply to mysql-get-lock: it has no PostgreSQL session"},
		{"in-process", nemesis.Shape{Clients: 1, Backend: "mutex"}, "terminate does not apply to mutex"},
	})
}

// TestTerminateNames: a terminate is one op, terminate, with nothing to
// heal: it may last no time.
func TestTerminateNames(t *testing.T) {
	if start, stop := opNames(t, "terminate"); start != "terminate" || stop != "" {
		t.Errorf("ops %q, %q, want terminate alone", start, stop)
	}
	if !allowsZero(t, "terminate") {
		t.Error("terminate with `for: 0s` is refused")
	}
}

// TestTerminateIdle: a terminate that ended a session acted; one that
// found none, or only sessions gone already, did nothing.
func TestTerminateIdle(t *testing.T) {
	idle, ok := lookup(t, "terminate").(interface{ Idle(map[string]any) string })
	if !ok {
		t.Fatal("terminate cannot say it did nothing")
	}
	for _, tc := range []struct {
		name string
		val  map[string]any
		idle bool
	}{
		{"ended one", map[string]any{"sessions": []map[string]any{{"client": "p0", "pid": int32(7), "terminated": true}}}, false},
		{"found none", map[string]any{"sessions": []map[string]any{}}, true},
		{"gone already", map[string]any{"sessions": []map[string]any{{"client": "p0", "pid": int32(7), "terminated": false}}}, true},
	} {
		if got := idle.Idle(tc.val); (got != "") != tc.idle {
			t.Errorf("%s: Idle %q, want idle %v", tc.name, got, tc.idle)
		}
	}
}

// TestTerminateStartWithoutPostgres: a run without a PostgreSQL server is
// ErrTarget.
func TestTerminateStartWithoutPostgres(t *testing.T) {
	env := fakeEnv(t, 1, &fakeServer{name: "redis-0"})
	_, heal, err := lookup(t, "terminate").Start(context.Background(), env, terminateOf(0), time.Second)
	if !errors.Is(err, nemesis.ErrTarget) || !strings.Contains(err.Error(), "terminate needs a PostgreSQL server") || heal != nil {
		t.Errorf("Start: %v, want ErrTarget", err)
	}
}

// TestTerminateRandomParams: a random terminate ends every holder's
// session (no client named).
func TestTerminateRandomParams(t *testing.T) {
	for _, p := range randomParams(t, "terminate", fakeEnv(t, 3), 1, 5) {
		if tp := p.(*nemesis.TerminateParams); len(tp.List()) != 0 {
			t.Errorf("random params %+v, want none", tp)
		}
	}
}
