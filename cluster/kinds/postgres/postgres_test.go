package postgres

import (
	"context"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster/local"
	"github.com/locktorture/locktorture/internal/testenv"

	"github.com/locktorture/locktorture/internal/duration"
	"github.com/locktorture/locktorture/internal/leakcheck"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/external"
)

func requirePostgres(t *testing.T) {
	t.Helper()
	if _, err := findPostgres(); err != nil {
		testenv.Missing(t, "postgres")
	}
}

// startPG starts a cluster's PostgreSQL and reports how long it took.
func startPG(t *testing.T, tmp string, opt Options) (*cluster.Cluster, *Postgres, time.Duration) {
	t.Helper()
	c, err := cluster.New(cluster.Options{TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	begin := time.Now()
	pg, err := Start(context.Background(), c, opt)
	if err != nil {
		t.Fatal(err)
	}
	return c, pg, time.Since(begin)
}

// query runs one query returning an integer over a fresh connection.
func query(ctx context.Context, pg *Postgres, sql string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pg.Connect(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var n int64
	err = conn.QueryRow(ctx, sql).Scan(&n)
	return n, err
}

// TestPostgresLifecycle starts PostgreSQL twice (the second start copies
// the cached template), pauses, kills and restarts it, and checks Close
// leaves no postgres process and no directory behind.
func TestPostgresLifecycle(t *testing.T) {
	requirePostgres(t)
	ctx := context.Background()
	tmp := t.TempDir()
	c, pg, first := startPG(t, tmp, Options{IdleSessionTimeout: duration.Duration(90 * time.Second), Settings: map[string]string{"lock_timeout": "2s"}})
	_, _, second := startPG(t, t.TempDir(), Options{})
	t.Logf("start with template (maybe built now): %s; second start from the cached template: %s", first, second)

	// The same server is handed out again; other settings are refused.
	if again, err := Start(ctx, c, Options{}); err != nil || again != pg {
		t.Errorf("second Postgres call: %v, %v (want the same server)", again, err)
	}
	if _, err := Start(ctx, c, Options{Durable: true}); err == nil {
		t.Error("other settings for the running server were accepted")
	}
	// Settings reach the server; the fast defaults are on.
	for sql, want := range map[string]string{
		"SHOW fsync":                "off",
		"SHOW synchronous_commit":   "on",
		"SHOW idle_session_timeout": "90s",
		"SHOW lock_timeout":         "2s",
		"SHOW listen_addresses":     "127.0.0.1",
	} {
		conn, err := pg.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if err := conn.QueryRow(ctx, sql).Scan(&got); err != nil || got != want {
			t.Errorf("%s = %q (%v), want %q", sql, got, err, want)
		}
		conn.Close(ctx)
	}
	if os.Geteuid() == 0 {
		if who := procOwner(t, pg.PID()); who != "postgres" {
			t.Errorf("as root the server must run as the postgres user, runs as %q", who)
		}
	}
	// Setup runs once per name.
	if err := pg.Setup(ctx, "t", "CREATE TABLE t (n int)", "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if err := pg.Setup(ctx, "t", "CREATE TABLE t (n int)", "INSERT INTO t VALUES (1)"); err != nil {
		t.Errorf("second Setup ran again: %v", err)
	}

	// The leak check sees the server and its children.
	procs := leakcheck.ProcessesUnder(tmp)
	if len(procs) < 2 {
		t.Fatalf("leak check should see the postmaster and its children: %v", procs)
	}

	// Pause freezes the postmaster and the backends.
	if err := pg.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if state := testenv.ProcState(t, pg.PID()); state != "T" {
		t.Errorf("paused server in state %q, want T", state)
	}
	for _, k := range local.Children(pg.PID()) {
		if st, ok := local.State(k.PID()); ok && st != 'T' && st != 'Z' {
			t.Errorf("child %d of a paused server in state %c", k.PID(), st)
		}
	}
	pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	if _, err := query(pctx, pg, "SELECT 1"); err == nil {
		t.Error("a paused server answered")
	}
	cancel()
	if err := pg.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := query(ctx, pg, "SELECT count(*) FROM t"); err != nil || n != 1 {
		t.Fatalf("after resume: %d, %v", n, err)
	}

	// Kill leaves no process of the server; Restart recovers the data.
	kids := local.Children(pg.PID())
	if err := pg.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range kids {
		if !k.Gone() {
			t.Errorf("postgres child %d outlived the kill", k.PID())
		}
	}
	if left := leakcheck.ProcessesUnder(tmp); len(left) > 0 {
		t.Errorf("left after Kill: %v", left)
	}
	if _, err := query(ctx, pg, "SELECT 1"); err == nil {
		t.Fatal("a killed server answered")
	}
	port := pg.Port()
	if err := pg.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := query(ctx, pg, "SELECT count(*) FROM t"); err != nil || n != 1 || pg.Port() != port {
		t.Errorf("after restart: %d rows, %v, port %d (was %d)", n, err, pg.Port(), port)
	}

	// A paused server with a client connected is still stopped by Close,
	// children and all.
	conn, err := pg.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := pg.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	kids = local.Children(pg.PID())
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, k := range kids {
		if !k.Gone() {
			t.Errorf("postgres child %d outlived Close", k.PID())
		}
	}
	if left := leakcheck.ProcessesUnder(tmp); len(left) > 0 {
		t.Errorf("left after Close: %v", left)
	}
	if left := leakcheck.TempDirsLeft(tmp); len(left) > 0 {
		t.Errorf("temp dirs left after Close: %v", left)
	}
	if _, err := Start(ctx, c, Options{}); !errors.Is(err, cluster.ErrClosed) {
		t.Errorf("Postgres on a closed cluster: %v", err)
	}
}

// TestPostgresTemplateRace builds the template from two goroutines at once
// into an empty cache: both must get a complete template.
func TestPostgresTemplateRace(t *testing.T) {
	requirePostgres(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	bins, _ := findPostgres()
	tmp := t.TempDir()
	m := local.NewProvider(tmp)
	as, err := postgresRunAs(m)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, 2)
	errs := make([]error, 2)
	done := make(chan int)
	for i := range 2 {
		go func() {
			scratch := filepath.Join(tmp, "s"+strconv.Itoa(i))
			if err := os.MkdirAll(scratch, 0o700); err == nil {
				if err = as.Reach(tmp, scratch); err != nil {
					errs[i] = err
				}
			}
			if errs[i] == nil {
				got[i], errs[i] = postgresTemplate(context.Background(), m, bins, as, scratch)
			}
			done <- i
		}()
	}
	<-done
	<-done
	for i := range 2 {
		if errs[i] != nil {
			t.Fatalf("builder %d: %v", i, errs[i])
		}
		if !isFile(filepath.Join(got[i], "PG_VERSION")) || !isFile(filepath.Join(got[i], local.TemplateMarker)) {
			t.Errorf("builder %d got an incomplete template %s", i, got[i])
		}
	}
	if got[0] != got[1] {
		t.Errorf("two templates: %s and %s", got[0], got[1])
	}
	left, _ := filepath.Glob(filepath.Join(local.CacheDir(), ".build-*"))
	if len(left) > 0 {
		t.Errorf("build directories left in the cache: %v", left)
	}
}

// procOwner names the user a process runs as.
func procOwner(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "Uid:" {
			if u, err := user.LookupId(f[1]); err == nil {
				return u.Username
			}
			return f[1]
		}
	}
	return ""
}

// TestExternalCleanup: the run's own server is its one session killer;
// on a PostgreSQL someone else runs, Prepare makes
// the run a schema of its own (once: a second Prepare does not adopt it)
// and Cleanup removes that schema alone — the owner's tables are still
// there.
func TestExternalCleanup(t *testing.T) {
	requirePostgres(t)
	ctx := context.Background()
	c, pg, _ := startPG(t, t.TempDir(), Options{})
	// The server ends sessions once: kept as its kind's group too, it is
	// not a second session killer.
	if ks := c.SessionKillers(); len(ks) != 1 || any(ks[0]) != any(pg) {
		t.Errorf("session killers %v, want the server once", ks)
	}
	kinds := []string{Kind}
	f, err := cluster.LoadServersFile(testenv.WriteFile(t, "s.yaml", "postgres: "+pg.DSN()+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Check(ctx, kinds, false); err != nil {
		t.Fatal(err)
	}
	ns := external.NewNamespace()
	if err := pgExec(ctx, pg.DSN(), "CREATE TABLE mine (x int); INSERT INTO mine VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	g, err := external.Prepare(ctx, f, ns, kinds)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := external.Prepare(ctx, f, ns, kinds); err == nil {
		t.Error("a second Prepare adopted an existing schema")
	}
	if err := pgExec(ctx, g.Addrs("postgres")[0], "CREATE TABLE locktorture_locks (key text PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if err := external.Cleanup(ctx, f, ns, kinds); err != nil {
		t.Fatal(err)
	}
	if n, err := query(ctx, pg, "SELECT count(*) FROM mine"); err != nil || n != 1 {
		t.Errorf("the owner's table: %d rows, %v", n, err)
	}
	if n, err := query(ctx, pg, "SELECT count(*) FROM information_schema.schemata WHERE schema_name = '"+Schema(ns)+"'"); err != nil || n != 0 {
		t.Errorf("the run's schema is still there (%d, %v)", n, err)
	}
}
