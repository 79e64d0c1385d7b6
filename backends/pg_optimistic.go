package backends

import (
	"context"
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
	registerPG(Info{
		Name:        "pg-optimistic",
		Description: "no lock: read the row's version, write with a compare-and-set on it (the lock-free comparator)",
		Fencing:     true,
		LockFree:    true,
		Resources:   []string{"postgres"},
	}, PGSetupResource, func(s *pgSession) Client { return &pgOptimisticClient{pgSession: s} })
}

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
