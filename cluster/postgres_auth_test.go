package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/locktorture/locktorture/internal/testenv"
)

// TestPostgresNeedsTheRunsPassword: over TCP the run's PostgreSQL takes
// only the run's own random password — not none, not a guess — and the
// harness's DSN carries it; a restarted server keeps it.
func TestPostgresNeedsTheRunsPassword(t *testing.T) {
	testenv.Require(t, "postgres")
	ctx := context.Background()
	c, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pg, err := c.Postgres(ctx, PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pg.password == "" || !strings.Contains(pg.DSN(), pg.password) {
		t.Fatalf("the run's DSN carries no password: %s", pg.DSN())
	}
	for _, dsn := range []string{
		PostgresDSN(pg.Addr(), "intruder"), // no password
		fmt.Sprintf("postgres://%s:%s@%s/%s?sslmode=disable", PostgresUser, "locktorture", pg.Addr(), PostgresDatabase),
		fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", pg.Addr()),
	} {
		conn, err := pgx.Connect(ctx, dsn)
		if err == nil {
			conn.Close(ctx)
			t.Errorf("%s logged in", dsn)
		}
	}
	if err := pg.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatalf("the run's own DSN after a restart: %v", err)
	}
	conn.Close(ctx)
}
