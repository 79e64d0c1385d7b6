package scenarios_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/etcd"
	"github.com/locktorture/locktorture/cluster/kinds/postgres"
	"github.com/locktorture/locktorture/cluster/kinds/zookeeper"
	"github.com/locktorture/locktorture/internal/duration"
	"github.com/locktorture/locktorture/scenarios"
)

// parse parses in, failing the test on an error.
func parse(t *testing.T, in string) *scenarios.Scenario {
	t.Helper()
	s, err := scenarios.Parse([]byte(in), "f.yaml")
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, in)
	}
	return s
}

// TestKindBlocks: each kind's block is decoded by the kind into its own
// options, which reach the servers' start options; a kind the run uses
// gets its defaults when the file gives no block.
func TestKindBlocks(t *testing.T) {
	pg := "name: x\nbackend: pg-advisory\nclients: 4\n"
	tests := []struct {
		name string
		in   string
		kind string
		want cluster.KindOptions
	}{
		{"etcd members", "name: x\nbackend: etcd\netcd: {members: 3}\n", etcd.Kind, &etcd.Options{Ensemble: cluster.Ensemble{Members: 3}}},
		{"etcd block style", "name: x\nbackend: etcd\netcd:\n  members: 5\n", etcd.Kind, &etcd.Options{Ensemble: cluster.Ensemble{Members: 5}}},
		{"etcd default", "name: x\nbackend: etcd\n", etcd.Kind, &etcd.Options{Ensemble: cluster.Ensemble{Members: 1}}},
		{"zookeeper members", "name: x\nbackend: zookeeper\nzookeeper: {members: 3}\n", zookeeper.Kind, &zookeeper.Options{Ensemble: cluster.Ensemble{Members: 3}}},
		{"a kind the backend does not use", "name: x\nbackend: etcd\nzookeeper: {members: 3}\n", zookeeper.Kind, &zookeeper.Options{Ensemble: cluster.Ensemble{Members: 3}}},
		{"postgres settings", pg + "postgres: {via: pgbouncer, idle_session_timeout: 2s}\n", postgres.Kind,
			&postgres.Options{Via: postgres.ViaPgBouncer, IdleSessionTimeout: duration.Duration(2 * time.Second)}},
		{"pgbouncer settings", pg + "postgres: {via: pgbouncer}\npgbouncer: {pool_mode: transaction, pool_size: 2}\n", postgres.PgBouncerKind,
			&postgres.PgBouncerOptions{PoolMode: postgres.PoolTransaction, PoolSize: 2}},
		{"pgbouncer default", pg + "postgres: {via: pgbouncer}\n", postgres.PgBouncerKind, &postgres.PgBouncerOptions{PoolMode: postgres.PoolSession}},
		{"pgbouncer for exec", "name: x\nbackend: exec\nexec: {command: [prog], servers: [pgbouncer]}\npgbouncer: {pool_size: 3}\n", postgres.PgBouncerKind,
			&postgres.PgBouncerOptions{PoolMode: postgres.PoolSession, PoolSize: 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := parse(t, tc.in)
			if got := s.Kinds[tc.kind]; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Kinds[%s] = %#v, want %#v", tc.kind, got, tc.want)
			}
			if got := s.StartOptions().Kinds[tc.kind]; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("StartOptions().Kinds[%s] = %#v, want %#v", tc.kind, got, tc.want)
			}
		})
	}
	// PostgreSQL's start options carry the PgBouncer's, sized for the clients.
	s := parse(t, pg+"postgres: {via: pgbouncer}\npgbouncer: {pool_mode: transaction}\n")
	got := postgres.RunOptions(s.StartOptions())
	want := postgres.Options{Via: postgres.ViaPgBouncer, Bouncer: postgres.PgBouncerOptions{PoolMode: postgres.PoolTransaction, Clients: 4}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RunOptions = %+v, want %+v", got, want)
	}
	if m := cluster.OptionsOf[etcd.Options](parse(t, "name: x\nbackend: etcd\netcd: {members: 3}\n").StartOptions(), etcd.Kind); m.Members != 3 {
		t.Errorf("OptionsOf etcd: %+v", m)
	}
}

// TestOlderKeys: the top-level keys of before the blocks are still read,
// and mean what the block's keys do.
func TestOlderKeys(t *testing.T) {
	pg := "name: x\nbackend: pg-advisory\n"
	tests := []struct {
		name, older, blocks string
	}{
		{"etcd_members", "name: x\nbackend: etcd\netcd_members: 3\n", "name: x\nbackend: etcd\netcd: {members: 3}\n"},
		{"zookeeper_members", "name: x\nbackend: zookeeper\nzookeeper_members: 3\n", "name: x\nbackend: zookeeper\nzookeeper: {members: 3}\n"},
		{"postgres_via", pg + "postgres_via: pgbouncer\n", pg + "postgres: {via: pgbouncer}\n"},
		{"pool_mode and pool_size", pg + "postgres_via: pgbouncer\npool_mode: transaction\npool_size: 2\n",
			pg + "postgres: {via: pgbouncer}\npgbouncer: {pool_mode: transaction, pool_size: 2}\n"},
		{"postgres_via beside a postgres block", pg + "postgres:\n  idle_session_timeout: 1s\npostgres_via: pgbouncer\n",
			pg + "postgres: {via: pgbouncer, idle_session_timeout: 1s}\n"},
		{"mixed spellings of different settings", pg + "postgres: {via: pgbouncer}\npool_size: 2\npgbouncer: {pool_mode: transaction}\n",
			pg + "postgres: {via: pgbouncer}\npgbouncer: {pool_mode: transaction, pool_size: 2}\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			older, blocks := parse(t, tc.older), parse(t, tc.blocks)
			if !reflect.DeepEqual(older, blocks) {
				t.Errorf("the older spelling reads differently:\n got %#v\nwant %#v", older.Kinds, blocks.Kinds)
			}
			if !reflect.DeepEqual(older.StartOptions(), blocks.StartOptions()) {
				t.Errorf("start options differ: %+v, %+v", older.StartOptions(), blocks.StartOptions())
			}
		})
	}
}

// TestKindBlocksRefused: a key a kind does not take, a block for no kind
// (or for one that takes no settings), one setting in both spellings and
// bad values are each refused in one line naming the line at fault.
func TestKindBlocksRefused(t *testing.T) {
	pg := "name: x\nbackend: pg-advisory\n"
	tests := []struct {
		name string
		in   string
		line int
		has  string
	}{
		{"unknown key in a block", base + "etcd:\n  memebrs: 3\n", 4, `etcd takes no setting "memebrs" (it takes: members)`},
		{"unknown key in a flow block", base + "clients: 2\nzookeeper: {members: 3, size: 3}\n", 4, `zookeeper takes no setting "size"`},
		{"block for an unknown kind", base + "etcdd: {members: 3}\n", 3, `unknown field "etcdd"`},
		{"block for a kind without settings", base + "mariadb: {members: 3}\n", 3, "mariadb takes no settings"},
		{"block that is no mapping", base + "etcd: 3\n", 3, "the settings of etcd are a mapping"},
		{"a value of the wrong type", base + "etcd: {members: many}\n", 3, `"many" is not a whole number`},
		{"etcd members out of range", base + "etcd: {members: 8}\n", 3, "etcd: members must be from 1 to 7, not 8"},
		{"older spelling out of range", base + "etcd_members: 8\n", 3, "etcd_members"},
		{"zookeeper members 2", base + "zookeeper: {members: 2}\n", 3, "members must be 1 or 3, not 2"},
		{"both spellings", base + "etcd: {members: 3}\netcd_members: 3\n", 4, "etcd_members is the older spelling of etcd: {members: ...}, which the file gives too (line 3)"},
		{"both spellings, block after", base + "pool_size: 2\npgbouncer:\n  pool_size: 3\n", 3, "give it once"},
		{"unknown pooler", pg + "postgres: {via: pgpool}\n", 3, "pgpool"},
		{"unknown pool mode", pg + "postgres: {via: pgbouncer}\npgbouncer:\n  pool_mode: statement\n", 5, `pool_mode "statement" is not session or transaction`},
		{"pool size zero", pg + "postgres: {via: pgbouncer}\npgbouncer: {pool_size: 0}\n", 4, "pool_size must be 1 or more, not 0"},
		{"pgbouncer without a pooler", pg + "clients: 2\npgbouncer: {pool_mode: transaction}\n", 4, "postgres: {via: pgbouncer}"},
		{"pooler without PostgreSQL", base + "postgres: {via: pgbouncer}\n", 3, "nothing to put PgBouncer in front of"},
		{"pooler with TLS, older spelling", pg + "security: tls\npostgres_via: pgbouncer\n", 4, "not supported yet"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkRefused(t, tc.in, tc.line, tc.has)
		})
	}
}

// TestKindBlocksRoundTrip: the effective scenario writes the blocks (never
// the older keys) and reads back the same, whichever spelling the file used.
func TestKindBlocksRoundTrip(t *testing.T) {
	pg := "name: x\nbackend: pg-advisory\n"
	for _, in := range []string{
		"name: x\nbackend: etcd\netcd_members: 3\nzookeeper_members: 3\n",
		"name: x\nbackend: zookeeper\nzookeeper: {members: 3}\n",
		pg + "postgres_via: pgbouncer\npool_mode: transaction\npool_size: 2\npostgres:\n  idle_session_timeout: 1500ms\n  settings: {lock_timeout: 2s}\n",
		pg + "postgres: {via: pgbouncer}\n",
		"name: x\nbackend: exec\nexec: {command: [prog], servers: [pgbouncer, etcd]}\n",
		base,
	} {
		s := parse(t, in)
		data, err := s.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		for _, older := range []string{"etcd_members", "zookeeper_members", "postgres_via", "\npool_mode", "\npool_size"} {
			if strings.Contains(string(data), older) {
				t.Errorf("the effective scenario writes %s:\n%s", strings.TrimSpace(older), data)
			}
		}
		var top map[string]any
		if err := yaml.Unmarshal(data, &top); err != nil {
			t.Fatal(err)
		}
		for kind := range s.Kinds {
			if _, ok := top[kind]; !ok {
				t.Errorf("the effective scenario leaves out %s:\n%s", kind, data)
			}
		}
		back, err := scenarios.Parse(data, "scenario.yaml")
		if err != nil {
			t.Fatalf("Parse(Marshal()): %v\n%s", err, data)
		}
		if !reflect.DeepEqual(s, back) {
			t.Errorf("round trip differs:\n got %#v\nwant %#v\n%s", back.Kinds, s.Kinds, data)
		}
	}
}

// TestEnsembleAndDefaultServers: what a locktest suite asks of a
// scenario's servers.
func TestEnsembleAndDefaultServers(t *testing.T) {
	tests := []struct {
		in                 string
		ensemble, default_ bool
	}{
		{"name: x\nbackend: etcd\n", false, true},
		{"name: x\nbackend: etcd\netcd: {members: 3}\n", true, false},
		{"name: x\nbackend: zookeeper\nzookeeper_members: 3\n", true, false},
		{"name: x\nbackend: pg-advisory\n", false, true},
		{"name: x\nbackend: pg-advisory\npostgres: {idle_session_timeout: 1s}\n", false, false},
	}
	for _, tc := range tests {
		s := parse(t, tc.in)
		if s.Ensemble() != tc.ensemble || s.DefaultServers() != tc.default_ {
			t.Errorf("%q: Ensemble %v, DefaultServers %v; want %v, %v", tc.in, s.Ensemble(), s.DefaultServers(), tc.ensemble, tc.default_)
		}
	}
}

// TestApplyKinds: a backend given on the command line gets its kinds'
// defaults, and a kind's block the flags make wrong is refused in the
// block's words (no flag sets it).
func TestApplyKinds(t *testing.T) {
	s, err := scenarios.Builtin("baseline")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(scenarios.Overrides{Backend: ptr("etcd")}); err != nil {
		t.Fatal(err)
	}
	if got := s.Kinds[etcd.Kind]; !reflect.DeepEqual(got, &etcd.Options{Ensemble: cluster.Ensemble{Members: 1}}) {
		t.Errorf("--backend etcd: Kinds[etcd] = %#v", got)
	}
	s, err = scenarios.Builtin("pg-bouncer-transaction")
	if err != nil {
		t.Fatal(err)
	}
	err = s.Apply(scenarios.Overrides{TLS: true})
	if err == nil || !strings.Contains(err.Error(), "invalid scenario: postgres.via: pgbouncer with security: tls") {
		t.Errorf("--tls with a PgBouncer: %v", err)
	}
}
