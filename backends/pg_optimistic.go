package backends

import (
	"context"

	"github.com/locktorture/locktorture/cluster"
)

// pg-optimistic takes no lock at all: the lock-free comparator. Acquire
// reads the key's row version from the postgres resource's table and
// always succeeds, handing the version back as the grant's fence and as a
// PGVersion in the grant's Conn; release does nothing. The postgres
// resource then writes with a compare-and-set on that version (UPDATE ...
// SET value=$v, version=version+1 WHERE key=$k AND version=$fence): when
// another write got in first, no row matches and the write is rejected as
// stale (a fail). It works only with the postgres resource.
//
// Guarantees: no accepted write is based on a stale read (no lost update),
// without any client ever waiting. Does not guarantee mutual exclusion —
// "holders" overlap by design, so the mutex and linearizable checkers do
// not apply — nor progress: under contention many writes are rejected. Its
// fence is the row version read at acquire.
func init() {
	Register(Info{
		Name:        "pg-optimistic",
		Description: "no lock: read the row's version, write with a compare-and-set on it (the lock-free comparator)",
		Servers:     "1 postgres",
		Kinds:       []string{"postgres"},
		Fencing:     true,
		LockFree:    true,
		Resources:   []string{"postgres"},
	}, newPGOptimistic)
}

type pgOptimistic struct {
	env Env
	pg  *cluster.Postgres
}

func newPGOptimistic(ctx context.Context, env Env) (Backend, error) {
	pg, err := startPostgres(ctx, env)
	if err != nil {
		return nil, err
	}
	if err := PGSetupResource(ctx, pg, env.Keys); err != nil {
		return nil, err
	}
	return &pgOptimistic{env: env, pg: pg}, nil
}

func (b *pgOptimistic) Client(ctx context.Context, c ClientEnv) (Client, error) {
	s, err := newPGSession(ctx, b.env, c.Process, b.pg)
	if err != nil {
		return nil, err
	}
	return &pgOptimisticClient{pgSession: s}, nil
}

func (b *pgOptimistic) Close() error { return nil }

type pgOptimisticClient struct {
	*pgSession
}

func (c *pgOptimisticClient) Acquire(ctx context.Context, key string) (Grant, error) {
	conn, err := c.get(ctx)
	if err != nil {
		return Grant{}, err
	}
	var v int64
	if err := conn.QueryRow(ctx, "SELECT version FROM "+PGResourceTable+" WHERE key = $1", key).Scan(&v); err != nil {
		c.drop()
		return Grant{}, pgFail("read the version of "+key, err)
	}
	return Grant{Fence: &v, Conn: PGVersion{Version: v}}, nil
}

// Release does nothing: no lock was taken.
func (c *pgOptimisticClient) Release(ctx context.Context, key string, g Grant) error { return nil }
