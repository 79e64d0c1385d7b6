package runner

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/postgres"
	"github.com/locktorture/locktorture/internal/testenv"
	"github.com/locktorture/locktorture/scenarios"
)

// TestPgBouncerRuns: pg-bouncer-transaction gives its verdicts against a
// PostgreSQL and a PgBouncer someone else runs (a servers file naming
// both; the clients dial the PgBouncer), and results.json names the
// PgBouncer's version. The run's own servers are TestBuiltinScenarios'.
func TestPgBouncerRuns(t *testing.T) {
	testenv.Require(t, "postgres", "pgbouncer")
	ctx := context.Background()
	// Someone else's: a transaction pool of 2 server connections.
	own, err := cluster.New(cluster.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = own.Close() })
	opt := postgres.PgBouncerOptions{PoolMode: postgres.PoolTransaction, PoolSize: 2}
	pg, err := postgres.Start(ctx, own, postgres.Options{Bouncer: opt})
	if err != nil {
		t.Fatal(err)
	}
	b, err := postgres.StartPgBouncer(ctx, own, pg, opt)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	password, _ := u.User.Password()
	file := filepath.Join(t.TempDir(), "servers.yaml")
	if err := os.WriteFile(file, []byte("postgres: "+pg.DSN()+"\npgbouncer: "+b.DSN()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ext := ptr(cluster.ServersExternal)
	tests := []struct {
		name, backend string
		o             scenarios.Overrides
		want          checker.Validity
	}{
		{"external/pg-advisory", "pg-advisory", scenarios.Overrides{Servers: ext, ServersFile: &file}, checker.Invalid},
		{"external/pg-advisory-xact", "pg-advisory-xact", scenarios.Overrides{Servers: ext, ServersFile: &file}, checker.Valid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Backend = &tc.backend
			sc := builtin(t, "pg-bouncer-transaction", tc.o)
			out, store := runIt(t, sc)
			if out.Results.Valid != tc.want {
				t.Fatalf("verdict %s, want %s:\n%s", out.Results.Valid, tc.want, out.Summary)
			}
			if s := out.Results.Servers; s == nil || s.Versions["pgbouncer"] == "" {
				t.Errorf("results.json names no PgBouncer version: %+v", s)
			}
			// Nothing the run wrote holds the password of the DSNs.
			_ = filepath.WalkDir(store, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				if body, _ := os.ReadFile(p); password == "" || strings.Contains(string(body), password) {
					t.Errorf("%s holds the password (or the server has none)", p)
				}
				return nil
			})
		})
	}
}
