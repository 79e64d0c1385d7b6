package mariadb

import (
	"context"
	"database/sql"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/external"
	"github.com/locktorture/locktorture/internal/testenv"
)

// openSession opens one session of client p (holding its client lock, as
// the backends' sessions do) to m.
func openSession(t *testing.T, ctx context.Context, m *MariaDB, p int) *sql.Conn {
	t.Helper()
	cfg, err := m.Config(m.Addr())
	if err != nil {
		t.Fatal(err)
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got int
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", m.ClientLockName(p)).Scan(&got); err != nil || got != 1 {
		t.Fatalf("client lock of p%d: %d, %v", p, got, err)
	}
	return conn
}

// TestMariaDB starts one MariaDB (as the mysql user when root) and, on it:
// asks its version, ends client sessions by name and by what they hold,
// kills and restarts it with its data, and serves it as a servers file's
// DSN with a database of the run's own that the clean-up drops.
func TestMariaDB(t *testing.T) {
	testenv.Require(t, "mariadbd", "mariadb-install-db")
	ctx := context.Background()
	// Two at once, as parallel runs start them: their installs must not
	// collide (they could, sharing the system's /tmp: a mariadbd starting
	// removes every #sql temporary file there, another install's too; a
	// narrow window, so this does not catch it every time), and neither
	// may count a start-up exit as a server that died.
	var cs [2]*cluster.Cluster
	var ms [2]*MariaDB
	errs := make(chan error, 2)
	begin := time.Now()
	for i := range cs {
		c, err := cluster.New(cluster.Options{TempDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cs[i] = c
		go func() {
			var err error
			ms[i], err = Start(ctx, c)
			errs <- err
		}()
	}
	for range cs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("two started at once in %s", time.Since(begin))
	for _, c := range cs {
		if d := c.Died(); len(d) > 0 {
			t.Fatalf("a start counted as a death: %v", d)
		}
	}
	c, m := cs[0], ms[0]
	if again, err := Start(ctx, c); err != nil || again != m {
		t.Fatalf("a second MariaDB call: %v, %v (want the same server)", again, err)
	}
	if v, err := c.ServerVersion(ctx, m); err != nil || !strings.Contains(v, "MariaDB") {
		t.Fatalf("version %q, %v", v, err)
	}
	if os.Geteuid() == 0 {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(m.PID()) + "/status")
		if err != nil || !strings.Contains(string(b), "Uid:\t") || strings.Contains(string(b), "Uid:\t0\t") {
			t.Fatalf("mariadbd runs as root (or cannot be read): %v\n%s", err, b)
		}
	}
	if err := m.Setup(ctx, "t", "CREATE TABLE IF NOT EXISTS t (k INT PRIMARY KEY, v INT) ENGINE=InnoDB", "INSERT IGNORE INTO t VALUES (1, 41)"); err != nil {
		t.Fatal(err)
	}

	t.Run("kill sessions", func(t *testing.T) {
		p0, p1, p2 := openSession(t, ctx, m, 0), openSession(t, ctx, m, 1), openSession(t, ctx, m, 2)
		if _, err := p1.ExecContext(ctx, "DO GET_LOCK(?, 0)", m.LockName("k0")); err != nil {
			t.Fatal(err)
		}
		// By name: p0, though it holds nothing.
		out, err := m.KillSessions(ctx, []int{0})
		if err != nil || len(out) != 1 || out[0]["client"] != "p0" {
			t.Fatalf("kill p0: %v, %v", out, err)
		}
		// By what they hold: p1's lock, nothing of p2's.
		out, err = m.KillSessions(ctx, nil)
		if err != nil || len(out) != 1 || out[0]["client"] != "p1" {
			t.Fatalf("kill the holders: %v, %v", out, err)
		}
		for _, tc := range []struct {
			name  string
			conn  *sql.Conn
			alive bool
		}{{"p0", p0, false}, {"p1", p1, false}, {"p2", p2, true}} {
			err := tc.conn.PingContext(ctx)
			if (err == nil) != tc.alive {
				t.Errorf("%s: ping after the kills: %v, want alive %v", tc.name, err, tc.alive)
			}
		}
		// A transaction open is held too.
		if _, err := p2.ExecContext(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		if _, err := p2.ExecContext(ctx, "SELECT v FROM t WHERE k = 1 FOR UPDATE"); err != nil {
			t.Fatal(err)
		}
		out, err = m.KillSessions(ctx, nil)
		if err != nil {
			t.Fatalf("kill the row's holder: %v", err)
		}
		// p1's session, killed above, may still be listed with its locks
		// while its thread ends (under load, a while): found gone by the
		// kill, it is said not killed. Only p2 is killed now.
		var killed []any
		for _, o := range out {
			switch {
			case o["killed"] == true:
				killed = append(killed, o["client"])
			case o["client"] != "p0" && o["client"] != "p1":
				t.Errorf("kill the row's holder: %v not killed", o)
			}
		}
		if len(killed) != 1 || killed[0] != "p2" {
			t.Fatalf("kill the row's holder: killed %v, want p2 (%v)", killed, out)
		}
	})

	t.Run("kill and restart", func(t *testing.T) {
		if err := m.Kill(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		db, err := m.Open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var v int
		if err := db.QueryRowContext(ctx, "SELECT v FROM t WHERE k = 1").Scan(&v); err != nil || v != 41 {
			t.Fatalf("after the restart: %d, %v (want 41)", v, err)
		}
	})

	t.Run("servers file", func(t *testing.T) {
		dsn := m.ClientAddress(m.Addr(), -1)
		f, err := serversFile(t, []byte("mariadb: "+dsn+"\n"), "s.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Check(ctx, []string{Kind}, false); err != nil {
			t.Fatal(err)
		}
		g, err := external.Prepare(ctx, f, "ltmaria", []string{Kind})
		if err != nil {
			t.Fatal(err)
		}
		ext, err := Start(ctx, cluster.NewExternal(g))
		if err != nil {
			t.Fatal(err)
		}
		if ext.database() != DatabaseOf("ltmaria") || ext.Addr() != m.Addr() {
			t.Fatalf("external: database %s at %s", ext.database(), ext.Addr())
		}
		if err := ext.Setup(ctx, "x", "CREATE TABLE x (k INT)"); err != nil {
			t.Fatal(err)
		}
		if err := external.Cleanup(ctx, f, "ltmaria", []string{Kind}); err != nil {
			t.Fatal(err)
		}
		if err := ext.ping(ctx); err == nil {
			t.Fatal("the run's database is still there after the clean-up")
		}
		// The servers file's username and password_env replace the DSN's.
		t.Setenv("LT_TEST_MARIADB_PW", m.dsn.password)
		f, err = serversFile(t, []byte("mariadb: {dsn: \"mariadb://nobody:wrong@"+m.Addr()+"/\", username: "+mariadbUser+", password_env: LT_TEST_MARIADB_PW}\n"), "s.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Check(ctx, []string{Kind}, false); err != nil {
			t.Fatalf("with the file's credentials: %v", err)
		}
		t.Setenv("LT_TEST_MARIADB_PW", "wrong-password")
		f, err = serversFile(t, []byte("mariadb: {dsn: \"mariadb://"+m.Addr()+"\", username: "+mariadbUser+", password_env: LT_TEST_MARIADB_PW}\n"), "s.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Check(ctx, []string{Kind}, false); err == nil || strings.Contains(err.Error(), "wrong-password") {
			t.Fatalf("a wrong password: %v", err)
		}
		if _, err := serversFile(t, []byte("mariadb: 127.0.0.1:3306\n"), "s.yaml"); err == nil {
			t.Fatal("a mariadb server named by host:port was taken for a DSN")
		}
	})
}

// serversFile is the servers file b says, read from a file as a user's is.
func serversFile(t *testing.T, b []byte, name string) (*cluster.ServersFile, error) {
	t.Helper()
	return cluster.LoadServersFile(testenv.WriteFile(t, name, string(b)))
}
