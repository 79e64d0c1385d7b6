package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/etcd"
	"github.com/locktorture/locktorture/cluster/kinds/postgres"
	"github.com/locktorture/locktorture/cluster/kinds/zookeeper"
	"github.com/locktorture/locktorture/internal/testenv"
	"github.com/locktorture/locktorture/scenarios"
)

// lockedServers starts, as someone else would run them, an etcd that asks
// for a user, a password and a client certificate (TLS from a CA of its
// own), a PostgreSQL that takes scram over TLS only, and a ZooKeeper
// whose znodes belong to a digest user; it returns a servers file naming
// them with their credentials (passwords by reference, in environment
// variables it sets) and the secrets, to look for afterwards.
func lockedServers(t *testing.T) (file, zkAddr string, secrets []string) {
	t.Helper()
	ctx := context.Background()
	theirs := func(tls bool) *cluster.Cluster {
		c, err := cluster.New(cluster.Options{TempDir: t.TempDir(), TLS: tls})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	withTLS, plain := theirs(true), theirs(false) // ZooKeeper speaks no TLS here
	e, err := etcd.Start(ctx, withTLS, etcd.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pg, err := postgres.Start(ctx, withTLS, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	z, err := zookeeper.Start(ctx, plain, zookeeper.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ea := e.Members()[0].Auth()
	zUser, zPass, _ := strings.Cut(z.Auth().Digest, ":")
	// The DSN as a user would write it: no password, no TLS settings (the
	// servers file's password_env and tls give them).
	u, err := url.Parse(pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	pgPass, _ := u.User.Password()
	u.User = url.User(u.User.Username())
	u.RawQuery = ""
	t.Setenv("LT_TEST_ETCD_PW", ea.Password)
	t.Setenv("LT_TEST_ZK_PW", zPass)
	t.Setenv("LT_TEST_PG_PW", pgPass)
	text := fmt.Sprintf(`etcd:
  - addr: %s
    username: %s
    password_env: LT_TEST_ETCD_PW
    tls: {ca: %s, cert: %s, key: %s}
zookeeper:
  - addr: %s
    username: %s
    password_env: LT_TEST_ZK_PW
postgres:
  dsn: %s
  password: ${LT_TEST_PG_PW}
  tls: {ca: %s}
`, e.Endpoints()[0], ea.Username, ea.TLS.CA, ea.TLS.Cert, ea.TLS.Key, z.Members()[0].Addr(), zUser, u, ea.TLS.CA)
	file = filepath.Join(t.TempDir(), "servers.yaml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return file, z.Members()[0].Addr(), []string{ea.Password, zPass, pgPass}
}

// TestExternalWithCredentials: against servers that ask for credentials —
// etcd with a user and client certificates, PostgreSQL with scram and
// ssl=on checked with sslmode=verify-full, ZooKeeper with a digest user —
// a run given them in the servers file gets the verdicts of a local run
// (baseline valid, etcd-pause and zk-pause invalid), no secret appears in
// its store, and a wrong password is one line before any client starts.
func TestExternalWithCredentials(t *testing.T) {
	testenv.Require(t, "etcd", "postgres", "java")
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
		testenv.Missing(t, "zookeeper")
	}
	file, zkAddr, secrets := lockedServers(t)
	ext := ptr(cluster.ServersExternal)
	tests := []struct {
		scenario, backend string
		want              checker.Validity
	}{
		{"baseline", "etcd", checker.Valid},
		{"etcd-pause", "", checker.Invalid},
		{"baseline", "zookeeper", checker.Valid},
		{"zk-pause", "", checker.Invalid},
		{"baseline", "pg-advisory", checker.Valid},
	}
	for _, tc := range tests {
		t.Run(tc.scenario+"/"+tc.backend, func(t *testing.T) {
			o := scenarios.Overrides{Servers: ext, ServersFile: &file}
			if tc.backend != "" {
				o.Backend, o.Duration = &tc.backend, ptr(1500*time.Millisecond)
			}
			out, store := runIt(t, builtin(t, tc.scenario, o))
			if out.Results.Valid != tc.want {
				t.Fatalf("verdict %s, want %s:\n%s", out.Results.Valid, tc.want, out.Summary)
			}
			if h := out.Results.Checkers.Mutex; h == nil || h.Holds == 0 {
				t.Errorf("no lock was held: %+v", h)
			}
			noSecretIn(t, store, secrets)
			if tc.backend == "zookeeper" {
				// The run authenticated as the digest user: the root it
				// made is the user's to list, nobody else's.
				conn, _, err := zk.Connect([]string{zkAddr}, 2*time.Second, zk.WithLogInfo(false))
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				if _, _, err := conn.Children("/locktorture"); !errors.Is(err, zk.ErrNoAuth) {
					t.Errorf("a client without the digest user lists /locktorture: %v", err)
				}
			}
		})
	}
	t.Run("a wrong password", func(t *testing.T) {
		t.Setenv("LT_TEST_ETCD_PW", "guess")
		sc := builtin(t, "baseline", scenarios.Overrides{Backend: ptr("etcd"), Servers: ext, ServersFile: &file})
		store := t.TempDir()
		_, err := Run(context.Background(), sc, Options{Store: store, TempDir: t.TempDir()})
		if err == nil || errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "etcd 127.0.0.1:") ||
			!strings.Contains(err.Error(), "refused") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("error %v: want one line naming the etcd server and the refusal (a harness failure)", err)
		}
		t.Logf("a wrong etcd password: %v", err)
		if runs, _ := filepath.Glob(filepath.Join(store, "*", "*", "*")); len(runs) > 0 {
			t.Errorf("a run was left in the store: %v", runs)
		}
	})
}

// noSecretIn fails when any file under dir holds one of secrets.
func noSecretIn(t *testing.T, dir string, secrets []string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err // a directory, or the latest symlink
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if s != "" && bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds a secret", p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
