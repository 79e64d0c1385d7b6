package runner

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/mariadb"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/testenv"
	"github.com/locktorture/locktorture/scenarios"
)

// sharedMariaDB is one MariaDB the package's tests share, as a server
// someone else runs: each run makes a database of its own on it and drops
// it at its end. TestMain stops it.
var sharedMariaDB struct {
	once sync.Once
	c    *cluster.Cluster
	m    *mariadb.MariaDB
	dir  string
	file string
	err  error
}

// mariadbServersFile starts the shared MariaDB (the first call) and
// returns a servers file naming it by its DSN, and the server.
func mariadbServersFile(t *testing.T) (string, *mariadb.MariaDB) {
	t.Helper()
	testenv.Require(t, "mariadbd", "mariadb-install-db")
	s := &sharedMariaDB
	s.once.Do(func() {
		if s.dir, s.err = os.MkdirTemp("", "lt-mariadb-test-"); s.err != nil {
			return
		}
		if s.c, s.err = cluster.New(cluster.Options{TempDir: s.dir}); s.err != nil {
			return
		}
		if s.m, s.err = mariadb.Start(context.Background(), s.c); s.err != nil {
			return
		}
		s.file = filepath.Join(s.dir, "servers.yaml")
		s.err = os.WriteFile(s.file, []byte("mariadb: "+s.m.ClientAddress(s.m.Addr(), -1)+"\n"), 0o600)
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.file, s.m
}

// stopSharedMariaDB stops the shared MariaDB, if a test started it.
func stopSharedMariaDB() {
	if s := &sharedMariaDB; s.c != nil {
		_ = s.c.Close()
	}
	if sharedMariaDB.dir != "" {
		_ = os.RemoveAll(sharedMariaDB.dir)
	}
}

// TestMySQLBackends runs the MariaDB backends on the shared server: no
// false alarm and real contention without faults (5 clients, 2 keys),
// with the in-harness resource and the mysql row (mysql-for-update's
// writes inside its own transaction); the session ended past wait_timeout
// (mysql-pause) lets client 1 in while client 0 holds the lock (a double
// grant: the lock has no lease), and client 0's release finds it gone; and
// each run's database is gone after it.
func TestMySQLBackends(t *testing.T) {
	file, m := mariadbServersFile(t)
	ext := ptr(cluster.ServersExternal)
	for _, tc := range []struct {
		scenario, backend, resource string
		want                        checker.Validity
	}{
		{"baseline", "mysql-get-lock", "memory", checker.Valid},
		{"baseline", "mysql-get-lock", "mysql", checker.Valid},
		{"baseline", "mysql-for-update", "mysql", checker.Valid},
		{"mysql-pause", "mysql-get-lock", "memory", checker.Invalid},
	} {
		t.Run(tc.scenario+"/"+tc.backend+"/"+tc.resource, func(t *testing.T) {
			o := scenarios.Overrides{Backend: &tc.backend, Resource: &tc.resource, Servers: ext, ServersFile: &file}
			if tc.scenario == "baseline" {
				o.Duration = ptr(1500 * time.Millisecond)
			}
			out, _ := runIt(t, builtin(t, tc.scenario, o))
			r := out.Results
			if r.Valid != tc.want {
				t.Fatalf("verdict %s, want %s:\n%s", r.Valid, tc.want, out.Summary)
			}
			ops := readHistory(t, out)
			switch tc.scenario {
			case "baseline":
				busy, inTx := 0, 0
				for _, op := range ops {
					if op.F == history.Acquire && op.Type == history.Fail {
						busy++
					}
					if op.F == history.Write && op.Tx {
						inTx++
					}
				}
				if h := r.Checkers.Mutex.Holds; h <= 20 || busy == 0 {
					t.Errorf("%d holds, %d acquires found the lock busy: the run hardly contended", h, busy)
				}
				if wantTx := tc.backend == "mysql-for-update"; (inTx > 0) != wantTx {
					t.Errorf("%d writes inside the lock's transaction, want some: %v", inTx, wantTx)
				}
			case "mysql-pause":
				m := r.Checkers.Mutex
				if m.DoubleGrants == 0 || m.Violations[0].Earlier.Process != 0 || m.Violations[0].Later.Process != 1 {
					t.Errorf("want client 1 granted the lock client 0 still held: %+v", m)
				}
				gone := false
				for _, op := range ops {
					gone = gone || op.F == history.Release && op.Process == 0 && op.Type == history.Fail && strings.Contains(op.Error, "session had ended")
				}
				if !gone {
					t.Error("client 0's release after the pause did not find its session ended")
				}
			}
			db, err := m.Open(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var left sql.NullString
			err = db.QueryRow("SELECT GROUP_CONCAT(SCHEMA_NAME) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'locktorture\\_lt%'").Scan(&left)
			if err != nil || left.Valid {
				t.Errorf("the run's database is left: %q, %v", left.String, err)
			}
		})
	}
}
