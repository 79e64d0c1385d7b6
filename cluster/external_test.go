package cluster

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/locktorture/locktorture/internal/testenv"
)

// TestExternalCleanupTouchesOnlyTheRun: on servers someone else runs, the
// run's namespace is all that Cleanup removes — the owner's keys, another
// run's keys and tables outside the run's schema are all still there
// (etcd's: its package's TestExternalCleanup).
func TestExternalCleanupTouchesOnlyTheRun(t *testing.T) {
	testenv.Require(t, "redis-server", "postgres")
	ctx := context.Background()
	c, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.StartRedis(ctx, RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pg, err := c.Postgres(ctx, PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{"redis", "postgres"}
	f, err := parseServersFile(fmt.Appendf(nil, "redis: [%s]\npostgres: %s\n", r.Addr(), pg.DSN()), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Check(ctx, kinds, false); err != nil {
		t.Fatal(err)
	}
	ns := NewNamespace()
	// The owner's data, and another run's, before the run.
	theirs := []string{"user:1", "locktorture:lock:k0", "locktorture:lock:lt00000000:k0", "k0", ns + "-not-a-key"}
	for _, k := range theirs {
		mustRedis(t, r.Addr(), "SET", k, "mine")
	}
	if err := pgExec(ctx, pg.DSN(), "CREATE TABLE mine (x int); INSERT INTO mine VALUES (1)"); err != nil {
		t.Fatal(err)
	}

	g, err := f.Prepare(ctx, ns, kinds)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Prepare(ctx, ns, kinds); err == nil {
		t.Error("a second Prepare adopted an existing schema")
	}
	// The run's data: keys of its backends and resources, a table in its schema.
	ours := []string{"locktorture:lock:" + ns + ":k0", "locktorture:fence:" + ns + ":k12"}
	for _, k := range ours {
		mustRedis(t, r.Addr(), "SET", k, "run")
	}
	if err := pgExec(ctx, g.Addrs("postgres")[0], "CREATE TABLE locktorture_locks (key text PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}

	if err := f.Cleanup(ctx, ns, kinds); err != nil {
		t.Fatal(err)
	}
	for _, k := range ours {
		if v, _ := redisCall(ctx, r.endpoint(), "EXISTS", k); v != int64(0) {
			t.Errorf("the run's key %s is still there", k)
		}
	}
	for _, k := range theirs {
		if v, _ := redisCall(ctx, r.endpoint(), "GET", k); v != "mine" {
			t.Errorf("the owner's key %s is gone (%v)", k, v)
		}
	}
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM mine").Scan(&n); err != nil || n != 1 {
		t.Errorf("the owner's table: %d rows, %v", n, err)
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1", PostgresSchema(ns)).Scan(&n); err != nil || n != 0 {
		t.Errorf("the run's schema is still there (%d, %v)", n, err)
	}
}

func mustRedis(t *testing.T, addr string, args ...string) {
	t.Helper()
	if _, err := redisCall(context.Background(), Endpoint{Addr: addr}, args...); err != nil {
		t.Fatal(err)
	}
}
