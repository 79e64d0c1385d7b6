package postgres

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/locktorture/locktorture/internal/leakcheck"
	"github.com/locktorture/locktorture/internal/testenv"

	"github.com/locktorture/locktorture/cluster"
)

// TestPgBouncerPoolModes puts a PgBouncer with one server connection in
// front of a PostgreSQL, in each pool mode, and has two clients take the
// same session-level advisory lock through it: in session mode each
// client has a server connection of its own and the second is refused;
// in transaction mode both statements run on the one server connection,
// whose session already holds the lock, so the second client is granted
// it too. Neither file the PgBouncer reads holds the password, the pools
// are the ones asked for, and Close leaves no process behind.
func TestPgBouncerPoolModes(t *testing.T) {
	requirePostgres(t)
	testenv.Require(t, "pgbouncer")
	for _, tc := range []struct {
		mode       string
		pool       int
		secondGets bool
		samePID    bool
	}{
		{PoolSession, 2, false, false},
		{PoolTransaction, 1, true, true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// A short directory: the server's unix socket fits in it, so it
			// has a password (see startPostgres).
			tmp, err := os.MkdirTemp("", "pgb")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(tmp)
			var c *cluster.Cluster
			var pg *Postgres
			if tc.mode == PoolSession {
				// As exec.servers: [pgbouncer] starts it: session mode.
				c, err = cluster.New(cluster.Options{TempDir: tmp})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if err := c.StartKind(ctx, PgBouncerKind, cluster.StartOptions{Kinds: map[string]cluster.KindOptions{PgBouncerKind: &PgBouncerOptions{PoolSize: tc.pool}}}); err != nil {
					t.Fatal(err)
				}
				if pg, err = Start(ctx, c, Options{}); err != nil {
					t.Fatal(err)
				}
			} else {
				c, pg, _ = startPG(t, tmp, Options{Bouncer: PgBouncerOptions{PoolMode: tc.mode, PoolSize: tc.pool, Clients: 2}})
			}
			b := frontOf(c, pg)
			if b == nil {
				t.Fatal("no PgBouncer in front of the server")
			}
			if b.Kind() != PgBouncerKind || c.Label(b) != "B" {
				t.Errorf("kind %q, label %q; want pgbouncer, B (after the server)", b.Kind(), c.Label(b))
			}
			for _, f := range []string{"pgbouncer.ini", "userlist.txt"} {
				body, err := os.ReadFile(filepath.Join(c.TempDir(), "pgbouncer", f))
				if err != nil {
					t.Fatal(err)
				}
				if pg.password == "" || strings.Contains(string(body), pg.password) {
					t.Errorf("%s holds the password (or the server has none)", f)
				}
				if f == "pgbouncer.ini" && !strings.Contains(string(body), "pool_mode = "+tc.mode) {
					t.Errorf("%s does not set pool_mode %s:\n%s", f, tc.mode, body)
				}
			}
			if dsn := ResourceDSN(c, pg); !strings.Contains(dsn, b.Addr()+"/"+pgbouncerResourceDB) {
				t.Errorf("the resource dials %s, not its own pool of the PgBouncer at %s", cluster.RedactDSN(dsn), b.Addr())
			}
			if v, err := b.Version(ctx); err != nil || !strings.HasPrefix(v, "1.") {
				t.Errorf("Version: %q, %v", v, err)
			}
			conns := make([]*pgx.Conn, 2)
			for p := range conns {
				dsn := ClientDSN(c, pg, p)
				if !strings.Contains(dsn, b.Addr()) {
					t.Fatalf("client %d dials %s, not the PgBouncer at %s", p, cluster.RedactDSN(dsn), b.Addr())
				}
				conn, err := pgx.Connect(ctx, dsn)
				if err != nil {
					t.Fatalf("client %d: %v", p, err)
				}
				defer conn.Close(context.Background())
				conns[p] = conn
			}
			lock := func(p int) (got bool, pid int32) {
				t.Helper()
				if err := conns[p].QueryRow(ctx, "SELECT pg_try_advisory_lock(42), pg_backend_pid()").Scan(&got, &pid); err != nil {
					t.Fatalf("client %d: %v", p, err)
				}
				return got, pid
			}
			got0, pid0 := lock(0)
			got1, pid1 := lock(1)
			if !got0 || got1 != tc.secondGets || (pid0 == pid1) != tc.samePID {
				t.Errorf("client 0 got %v on backend %d, client 1 got %v on backend %d; want client 1 to get it: %v, same backend: %v",
					got0, pid0, got1, pid1, tc.secondGets, tc.samePID)
			}
			if tc.mode == PoolSession {
				// Client 0 leaves: PgBouncer resets its server connection
				// (DISCARD ALL), which frees the lock.
				_ = conns[0].Close(ctx)
				deadline := time.Now().Add(5 * time.Second)
				for got, _ := lock(1); !got; got, _ = lock(1) {
					if time.Now().After(deadline) {
						t.Fatal("the lock was not freed when its holder left the pool")
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			if body, err := os.ReadFile(b.LogPath()); err != nil || strings.Contains(string(body), pg.password) {
				t.Errorf("PgBouncer's log (%v) holds the password", err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if left := leakcheck.ProcessesUnder(tmp); len(left) > 0 {
				t.Errorf("left running: %v", left)
			}
		})
	}
}
