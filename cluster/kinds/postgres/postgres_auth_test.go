package postgres

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/locktorture/locktorture/internal/testenv"

	"github.com/locktorture/locktorture/cluster"
)

// TestPostgresNeedsTheRunsPassword: over TCP the run's PostgreSQL takes
// only the run's own random password — not none, not a guess — and the
// harness's DSN carries it; a restarted server keeps it.
func TestPostgresNeedsTheRunsPassword(t *testing.T) {
	testenv.Require(t, "postgres")
	ctx := context.Background()
	c, err := cluster.New(cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pg, err := Start(ctx, c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if pg.password == "" || !strings.Contains(pg.DSN(), pg.password) {
		t.Fatalf("the run's DSN carries no password: %s", pg.DSN())
	}
	for _, dsn := range []string{
		postgresDSN(pg.Addr(), "intruder"), // no password
		fmt.Sprintf("postgres://%s:%s@%s/%s?sslmode=disable", postgresUser, "locktorture", pg.Addr(), postgresDatabase),
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

// TestPostgresTLS: with Options.TLS the run's PostgreSQL takes TCP
// connections over TLS only (hostssl), with a certificate of the run's
// CA for 127.0.0.1: the run's DSN dials with sslmode=verify-full; the
// same credentials without TLS, or checking the server against the
// system's roots, do not log in.
func TestPostgresTLS(t *testing.T) {
	testenv.Require(t, "postgres")
	ctx := context.Background()
	c, err := cluster.New(cluster.Options{TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pg, err := Start(ctx, c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dsn := pg.DSN()
	if !strings.Contains(dsn, "sslmode=verify-full") || !strings.Contains(dsn, "sslrootcert=") {
		t.Fatalf("the run's DSN does not check the server: %s", cluster.RedactDSN(dsn))
	}
	var ssl bool
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("the run's own DSN: %v", err)
	}
	if err := conn.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl); err != nil || !ssl {
		t.Errorf("the run's connection: ssl %v, %v", ssl, err)
	}
	conn.Close(ctx)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("sslrootcert")
	u.RawQuery = q.Encode()
	for name, bad := range map[string]string{
		"no TLS":             strings.Replace(dsn, "sslmode=verify-full", "sslmode=disable", 1),
		"the system's roots": u.String(),
	} {
		conn, err := pgx.Connect(ctx, bad)
		if err == nil {
			conn.Close(ctx)
			t.Errorf("%s: logged in", name)
		} else if name == "the system's roots" && !strings.Contains(err.Error(), "certificate") {
			t.Errorf("%s: %v, want a certificate error", name, err)
		}
	}
}
