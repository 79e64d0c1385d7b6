package scenarios_test

import (
	"slices"
	"testing"

	"github.com/locktorture/locktorture/cluster/kinds/postgres"
	"github.com/locktorture/locktorture/scenarios"
)

// TestPgBouncerRules: the rules of a PgBouncer in front of the run's
// PostgreSQL (the pgbouncer kind's, cluster/kinds/postgres) refuse a
// scenario with these words, each naming its line; and a PgBouncer joins
// the kinds of a run whose postgres block says via: pgbouncer.
func TestPgBouncerRules(t *testing.T) {
	pg := "name: x\nbackend: pg-advisory\n"
	for _, tc := range []struct{ name, in, want string }{
		{"pooler without PostgreSQL", "name: x\nbackend: redis-token\npostgres: {via: pgbouncer}\n",
			"f.yaml:3: invalid scenario: postgres.via: backend redis-token runs no PostgreSQL, and the resource is memory: there is nothing to put PgBouncer in front of"},
		{"pooler with TLS", pg + "security: tls\npostgres: {via: pgbouncer}\n",
			"f.yaml:4: invalid scenario: postgres.via: pgbouncer with security: tls is not supported yet: the harness's PgBouncer speaks no TLS to its clients nor to the server"},
		{"tables through someone else's pooler", "name: x\nbackend: pg-skip-locked\nservers: external\nservers_file: s.yaml\npostgres: {via: pgbouncer}\n",
			"f.yaml:5: invalid scenario: postgres.via: pgbouncer with servers: external: backend pg-skip-locked uses tables in the run's own schema (resource memory), which a PgBouncer cannot name to the server (it passes no search_path); run it on the harness's own servers (local or docker)"},
		{"the resource in the backend's transaction through someone else's pooler", "name: x\nbackend: pg-advisory-xact\nresource: postgres\nservers: external\nservers_file: s.yaml\npostgres: {via: pgbouncer}\n",
			"f.yaml:6: invalid scenario: postgres.via: pgbouncer with servers: external: backend pg-advisory-xact uses tables in the run's own schema (resource postgres), which a PgBouncer cannot name to the server (it passes no search_path); run it on the harness's own servers (local or docker)"},
		{"pgbouncer block without a pooler", pg + "pgbouncer: {pool_mode: transaction}\n",
			"f.yaml:3: invalid scenario: pgbouncer: its settings (pool_mode, pool_size) need a PgBouncer in the run: put one in front of PostgreSQL with postgres: {via: pgbouncer}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scenarios.Parse([]byte(tc.in), "f.yaml")
			if err == nil || err.Error() != tc.want {
				t.Errorf("Parse: %v\nwant:  %s", err, tc.want)
			}
		})
	}
	// In front of the postgres resource's PostgreSQL: accepted.
	parse(t, "name: x\nbackend: redis-token\nresource: postgres\npostgres: {via: pgbouncer}\n")
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{pg + "postgres: {via: pgbouncer}\n", true},
		{pg, false},
		{"name: x\nbackend: exec\nexec: {command: [prog], servers: [postgres]}\npostgres: {via: pgbouncer}\n", true},
		{"name: x\nbackend: exec\nexec: {command: [prog], servers: [redis, pgbouncer]}\n", true},
	} {
		s := parse(t, tc.in)
		kinds := s.ServerKinds()
		if got := slices.Contains(kinds, postgres.PgBouncerKind); got != tc.want {
			t.Errorf("ServerKinds() = %v: pgbouncer %v, want %v\n%s", kinds, got, tc.want, tc.in)
		}
		if n := len(kinds); n != len(slices.Compact(slices.Clone(kinds))) {
			t.Errorf("ServerKinds() = %v names a kind twice", kinds)
		}
	}
}
