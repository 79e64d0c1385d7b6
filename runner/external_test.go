package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/external"
	"github.com/locktorture/locktorture/cluster/kinds/postgres"
	rediskind "github.com/locktorture/locktorture/cluster/kinds/redis"
	"github.com/locktorture/locktorture/internal/journal"
	"github.com/locktorture/locktorture/internal/testenv"
	"github.com/locktorture/locktorture/scenarios"
)

// ownServers starts servers as someone else would (a cluster of the test's
// own, not the run's) and returns a servers file naming them.
func ownServers(t *testing.T, pg bool) (file string, redisAddr, dsn string) {
	t.Helper()
	ctx := context.Background()
	c, err := cluster.New(cluster.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	r, err := rediskind.Start(ctx, c, rediskind.Options{})
	if err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf("redis: [%s]\n", r.Addr())
	if pg {
		p, err := postgres.Start(ctx, c, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		dsn = p.DSN()
		text += "postgres: " + dsn + "\n"
	}
	file = filepath.Join(t.TempDir(), "servers.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, r.Addr(), dsn
}

// TestExternalRuns: against servers the run did not start, the verdicts
// are those of local runs, the owner's keys and tables are untouched, and
// nothing of the run is left on the servers.
func TestExternalRuns(t *testing.T) {
	testenv.Require(t, "redis-server", "postgres")
	file, addr, dsn := ownServers(t, true)
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	mine := map[string]string{"user:1": "a", "locktorture:lock:k0": "b", "locktorture:fence:k0": "7", "k0": "c"}
	for k, v := range mine {
		if err := rc.Set(ctx, k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE locktorture_locks (key text PRIMARY KEY); INSERT INTO locktorture_locks VALUES ('mine')"); err != nil {
		t.Fatal(err)
	}
	ext := ptr(cluster.ServersExternal)
	tests := []struct {
		scenario, backend string
		want              checker.Validity
	}{
		{"baseline", "redis-token", checker.Valid},
		{"kleppmann-pause", "redis-token", checker.Invalid},
		{"baseline", "pg-advisory", checker.Valid},
		{"baseline", "pg-skip-locked", checker.Valid},
	}
	for _, tc := range tests {
		t.Run(tc.scenario+"/"+tc.backend, func(t *testing.T) {
			sc := builtin(t, tc.scenario, scenarios.Overrides{Backend: &tc.backend, Servers: ext, ServersFile: &file, Duration: ptr(1500 * time.Millisecond)})
			if tc.scenario == "kleppmann-pause" {
				sc = builtin(t, tc.scenario, scenarios.Overrides{Servers: ext, ServersFile: &file})
			}
			out, _ := runIt(t, sc)
			if out.Results.Valid != tc.want {
				t.Fatalf("verdict %s, want %s:\n%s", out.Results.Valid, tc.want, out.Summary)
			}
			if out.Results.Servers == nil || out.Results.Servers.Mode != cluster.ServersExternal {
				t.Errorf("results.json does not say the servers were external: %+v", out.Results.Servers)
			}
			// The run's keys are gone; the owner's are all there.
			keys, err := rc.Keys(ctx, "*").Result()
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) != len(mine) {
				t.Errorf("keys after the run: %v, want only the owner's %v", keys, mine)
			}
			for k, v := range mine {
				if got, _ := rc.Get(ctx, k).Result(); got != v {
					t.Errorf("the owner's %s = %q, want %q", k, got, v)
				}
			}
			var n int
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM information_schema.schemata WHERE schema_name LIKE 'locktorture_lt%'").Scan(&n); err != nil || n != 0 {
				t.Errorf("the run's schema is left (%d, %v)", n, err)
			}
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM locktorture_locks WHERE key = 'mine'").Scan(&n); err != nil || n != 1 {
				t.Errorf("the owner's table was touched (%d, %v)", n, err)
			}
		})
	}
}

// TestExternalRefusals: a bad servers file and a server fault the file
// gives no control for are bad input; a server that does not answer or is
// not a primary is the harness's failure. None leaves a run in the store.
func TestExternalRefusals(t *testing.T) {
	testenv.Require(t, "redis-server")
	good, addr, _ := ownServers(t, false)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	port, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	replica, err := cluster.New(cluster.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Close()
	rep, err := rediskind.Start(ctx, replica, rediskind.Options{Args: []string{"--replicaof", "127.0.0.1", strings.Split(addr, ":")[1]}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, scenario, file string
		bad                  bool   // bad input (254), else a harness failure (255)
		has                  string // what the one line names
	}{
		{"a bad field", "baseline", write("bad.yaml", "redis: [127.0.0.1:1]\ncolour: red\n"), true, "bad.yaml:2"},
		{"no such file", "baseline", filepath.Join(dir, "missing.yaml"), true, "missing.yaml"},
		{"a server fault without control", "failover-less-kill", good, true, "no control"},
		{"nobody answers", "baseline", write("silent.yaml", fmt.Sprintf("redis: [127.0.0.1:%d]\n", port)), false, fmt.Sprintf("redis 127.0.0.1:%d", port)},
		{"a replica", "baseline", write("replica.yaml", "redis: ["+rep.Addr()+"]\n"), false, "not a primary"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sc *scenarios.Scenario
			if tc.scenario == "failover-less-kill" {
				sc = builtin(t, "redlock-restart", scenarios.Overrides{})
				sc.Backend = "redis-token"
				sc.Nemesis = scenarios.Nemesis{}
				if err := sc.Apply(scenarios.Overrides{Nemesis: ptr("server-pause")}); err != nil {
					t.Fatal(err)
				}
			} else {
				sc = builtin(t, tc.scenario, scenarios.Overrides{Backend: ptr("redis-token")})
			}
			sc.Servers, sc.ServersFile = cluster.ServersExternal, tc.file
			store := t.TempDir()
			_, err := Run(ctx, sc, Options{Store: store, TempDir: t.TempDir()})
			if err == nil {
				t.Fatal("the run went ahead")
			}
			if errors.Is(err, ErrBadInput) != tc.bad || !strings.Contains(err.Error(), tc.has) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q: want one line naming %q, bad input %v", err, tc.has, tc.bad)
			}
			if runs, _ := filepath.Glob(filepath.Join(store, "*", "*", "*")); len(runs) > 0 {
				t.Errorf("a run was left in the store: %v", runs)
			}
		})
	}
}

// TestExternalTooFewServers: a backend that needs more servers of a kind
// than the servers file names is refused before the run (bad input, no
// store directory), naming how many it needs.
func TestExternalTooFewServers(t *testing.T) {
	file := filepath.Join(t.TempDir(), "servers.yaml")
	if err := os.WriteFile(file, []byte("redis: [127.0.0.1:6390]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	sc := builtin(t, "baseline", scenarios.Overrides{Backend: ptr("redlock"), Servers: ptr(cluster.ServersExternal), ServersFile: &file})
	_, err := Run(context.Background(), sc, Options{Store: store, TempDir: t.TempDir()})
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "redlock needs 5 redis servers") || !strings.Contains(err.Error(), "names 1") {
		t.Fatalf("error %v, want bad input: redlock needs 5 redis servers, the file names 1", err)
	}
	if ents, _ := os.ReadDir(store); len(ents) > 0 {
		t.Errorf("the store holds %v after a refused run", ents)
	}
}

// TestLaterRunReplaysJournal: a harness killed before it cleaned up leaves
// its journal; the next run, of any mode (here local), undoes it before
// anything else — here, removes the dead run's keys from someone else's
// Redis — and the journal is gone.
func TestLaterRunReplaysJournal(t *testing.T) {
	requireRedis(t)
	jdir := t.TempDir()
	t.Setenv("LOCKTORTURE_JOURNAL_DIR", jdir)
	file, addr, _ := ownServers(t, false)
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	for _, k := range []string{"locktorture:fence:ltdead0001:k0", "locktorture:lock:ltdead0001:k1", "user:1"} {
		if err := rc.Set(ctx, k, "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	j, err := journal.Create(jdir, "2147483 1", "a run killed with kill -9")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Add(external.NamespaceUndo(file, "ltdead0001", []string{"redis"})); err != nil {
		t.Fatal(err)
	}
	_ = j.Close() // an undo is left: the file stays
	sc := builtin(t, "baseline", scenarios.Overrides{Duration: ptr(300 * time.Millisecond)})
	if _, err := Run(ctx, sc, Options{Store: t.TempDir(), TempDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	keys, err := rc.Keys(ctx, "*").Result()
	if err != nil || len(keys) != 1 || keys[0] != "user:1" {
		t.Errorf("keys %v (%v), want only the owner's user:1", keys, err)
	}
	if left, _ := filepath.Glob(filepath.Join(jdir, "*")); len(left) > 0 {
		t.Errorf("journal left: %v", left)
	}
}
