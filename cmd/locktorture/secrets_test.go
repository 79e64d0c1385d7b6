package main

import (
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/postgres"
	"github.com/locktorture/locktorture/internal/testenv"
)

// TestServersFileSecrets: a password a servers file holds — in a DSN of
// any form, a query's password=, a host:port's user info — never reaches
// stdout, stderr or the store, whether the value is refused (254, one
// line naming the file) or the server it names is down (255). The CLI is
// driven as main drives it, but without main's masking writers: what is
// printed must be masked where it is made. Every 4-byte piece of the
// password is looked for, so that a value cut short (YAML quotes only a
// value's first 7 bytes) leaks none of it either.
func TestServersFileSecrets(t *testing.T) {
	port, err := cluster.FreePort() // nothing listens there: the server is down
	if err != nil {
		t.Fatal(err)
	}
	down := "127.0.0.1:" + strconv.Itoa(port)
	for i, tc := range []struct {
		name     string
		scenario string
		file     string // PW stands for the password
		env      map[string]string
		code     int
		want     string // in the one line printed
	}{
		{"key=value DSN", "pg-pause", `postgres: "host=127.0.0.1 port=5432 user=u password=PW dbname=d"`, nil, 254, "is not a DSN"},
		{"key=value DSN, quoted", "pg-pause", `postgres: "host=127.0.0.1 password='PW x' dbname=d"`, nil, 254, "is not a DSN"},
		{"MySQL form", "mysql-pause", `mariadb: "u:PW@tcp(127.0.0.1:3306)/db"`, nil, 254, "is not a DSN"},
		{"postgres:// without a host", "pg-pause", `postgres: "postgres://u:PW@/db"`, nil, 254, "is not a DSN"},
		{"mysql:// under postgres", "pg-pause", `postgres: "mysql://u:PW@127.0.0.1/db"`, nil, 254, "is not a DSN"},
		{"postgres:// under mariadb", "mysql-pause", `mariadb: "postgres://u:PW@127.0.0.1/db"`, nil, 254, "is not a DSN"},
		{"Redis user info", "baseline", `redis: ["u:PW@127.0.0.1:6379"]`, nil, 254, "is not host:port"},
		{"Redis password only", "baseline", `redis: ["PW@127.0.0.1:6379"]`, nil, 254, "is not host:port"},
		{"a Redis address where a list goes", "baseline", `redis: "u:PW@127.0.0.1:6379"`, nil, 254, "is not a list of servers"},
		{"etcd URL", "etcd-pause", `etcd: ["http://u:PW@127.0.0.1:2379"]`, nil, 254, "is not host:port"},
		{"sentinel user info", "baseline", `sentinel: {master: m, addrs: ["u:PW@127.0.0.1:26379"]}`, nil, 254, "is not host:port"},
		{"a password in the file", "baseline", `redis: [{addr: 127.0.0.1:6379, password: PW}]`, nil, 254, "must be a reference"},
		{"a DSN named twice", "pg-pause", "postgres: \"postgres://u:PW@127.0.0.1:5432/db\"\npgbouncer: \"postgres://u:PW@127.0.0.1:5432/db\"", nil, 254, "named twice"},
		{"a port out of range, with a password", "pg-pause", `postgres: "postgres://u:PW@127.0.0.1:99999/db"`, nil, 254, "port 99999"},
		{"query password, server down", "pg-pause", `postgres: {dsn: "postgres://u@` + down + `/db?sslmode=disable&password=PW"}`, nil, 255, "server check failed: postgres postgres://u@" + down},
		{"user info password, server down", "pg-pause", `postgres: "postgres://u:PW@` + down + `/db?sslmode=disable"`, nil, 255, "server check failed: postgres postgres://u:xxxxx@" + down},
		{"MariaDB password, server down", "mysql-pause", `mariadb: "mariadb://u:PW@` + down + `/db"`, nil, 255, "server check failed: mariadb mariadb://u:xxxxx@" + down},
		{"password_env, server down", "pg-pause", `postgres: {dsn: "postgres://u@` + down + `/db?sslmode=disable", password_env: LT_SECRETS_PASS}`, map[string]string{"LT_SECRETS_PASS": "PW"}, 255, "server check failed: postgres postgres://u:xxxxx@" + down},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A password of its own per case: one case's masking is not
			// another's.
			pw := "Zq7xW-9rTk-" + string(rune('a'+i)) + "Lm2"
			dir := t.TempDir()
			for k, v := range tc.env {
				t.Setenv(k, strings.ReplaceAll(v, "PW", pw))
			}
			servers := filepath.Join(dir, "servers.yaml")
			if err := os.WriteFile(servers, []byte(strings.ReplaceAll(tc.file, "PW", pw)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			store := filepath.Join(dir, "store")
			code, stdout, stderr := runCLI(t, "run", "--scenario", tc.scenario, "--servers", "external", "--servers-file", servers, "--store", store, "--quiet")
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d naming %q", code, stderr, tc.code, tc.want)
			}
			if tc.code == exitBadArgs && !strings.Contains(stderr, servers+":") {
				t.Errorf("stderr %q does not name the file %s", stderr, servers)
			}
			if n := strings.Count(strings.TrimSpace(stderr), "\n"); n > 0 {
				t.Errorf("want one line, got %q", stderr)
			}
			texts := map[string]string{"stdout": stdout, "stderr": stderr}
			_ = filepath.WalkDir(store, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					b, _ := os.ReadFile(p)
					texts[p] = string(b)
				}
				return nil
			})
			for where, text := range texts {
				if piece := leakedPiece(text, pw); piece != "" {
					t.Errorf("%s holds %q of the password %q: %q", where, piece, pw, text)
				}
			}
			if runs, _ := filepath.Glob(filepath.Join(store, "*", "*", "*")); len(runs) > 0 {
				t.Errorf("store written: %v", runs)
			}
		})
	}
}

// leakedPiece is the first 4-byte piece of pw that text holds ("": none).
func leakedPiece(text, pw string) string {
	for i := 0; i+4 <= len(pw); i++ {
		if strings.Contains(text, pw[i:i+4]) {
			return pw[i : i+4]
		}
	}
	return ""
}

// TestServersFileEmptyPassword: a variable the servers file names for a
// password that is set but empty is told apart from one that is not set.
func TestServersFileEmptyPassword(t *testing.T) {
	servers := writeFile(t, "servers.yaml", "redis: [{addr: 127.0.0.1:6379, password_env: LT_EMPTY_PW}]\n")
	for _, tc := range []struct {
		name string
		set  bool
		want string
	}{
		{"set but empty", true, "environment variable LT_EMPTY_PW is set but empty"},
		{"not set", false, "environment variable LT_EMPTY_PW is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.set {
				t.Setenv("LT_EMPTY_PW", "")
			} else {
				t.Setenv("LT_EMPTY_PW", "x")
				os.Unsetenv("LT_EMPTY_PW")
			}
			store := t.TempDir()
			code, _, stderr := runCLI(t, "run", "--scenario", "baseline", "--servers", "external", "--servers-file", servers, "--store", store, "--quiet")
			if code != exitBadArgs || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("exit %d, stderr %q; want %d, one line naming %q", code, stderr, exitBadArgs, tc.want)
			}
		})
	}
}

// TestServersFileSecretsInTheStore: a run against a PostgreSQL of the
// test's own whose servers file holds the password in the DSN — in its
// user info, or its query's password= — is judged as usual, and neither
// what it prints nor any file of its store holds the password. The role
// is made here, with a password the harness has never seen but in the
// servers file.
func TestServersFileSecretsInTheStore(t *testing.T) {
	testenv.Require(t, "postgres")
	ctx := context.Background()
	c, err := cluster.New(cluster.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	pg, err := postgres.Start(ctx, c, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	db := strings.TrimPrefix(u.Path, "/")
	for i, tc := range []struct{ name, dsn string }{
		{"user info", "postgres://ROLE:PW@HOST/DB?sslmode=disable"},
		{"query password", "postgres://ROLE@HOST/DB?sslmode=disable&password=PW"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			role, pw := fmt.Sprintf("lt_secret_%d", i), fmt.Sprintf("Qm4rV-8sTz-%cKp9", 'a'+i)
			conn, err := pg.Connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			for _, stmt := range []string{
				fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", role, pw),
				fmt.Sprintf("GRANT CREATE ON DATABASE %s TO %s", db, role),
			} {
				if _, err := conn.Exec(ctx, stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
			dsn := strings.NewReplacer("ROLE", role, "PW", pw, "HOST", u.Host, "DB", db).Replace(tc.dsn)
			servers := writeFile(t, "servers.yaml", "postgres: \""+dsn+"\"\n")
			store := t.TempDir()
			code, stdout, stderr := runCLI(t, "run", "--scenario", "baseline", "--backend", "pg-advisory", "--duration", "1500ms",
				"--servers", "external", "--servers-file", servers, "--store", store)
			if code != exitValid {
				t.Fatalf("exit %d, want %d:\n%s\n%s", code, exitValid, stdout, stderr)
			}
			texts := map[string]string{"stdout": stdout, "stderr": stderr}
			err = filepath.WalkDir(store, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					b, rerr := os.ReadFile(p)
					texts[p] = string(b)
					return rerr
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(texts) < 7 {
				t.Errorf("the store holds %d files: the grep looked at nothing", len(texts)-2)
			}
			for where, text := range texts {
				if piece := leakedPiece(text, pw); piece != "" {
					t.Errorf("%s holds %q of the password", where, piece)
				}
			}
		})
	}
}
