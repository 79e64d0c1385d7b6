package backends

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// pg-advisory-xact is PostgreSQL's transaction-level advisory lock: BEGIN;
// SELECT pg_try_advisory_xact_lock(id) with id = pgLockID(key). The
// transaction stays open for the whole critical section and its COMMIT is
// the release (a lock not obtained rolls back). The grant's Conn is the
// pgx.Tx, so the postgres resource reads and writes inside the lock's own
// transaction: the write commits atomically with the release, and a
// session that dies (killed, terminated, timed out) rolls the write back
// together with the lock.
//
// Guarantees: as pg-advisory, the lock lasts while the session and its
// transaction do, however long the client pauses; with the postgres
// resource, no write of a holder whose lock was lost can ever commit. Does
// not guarantee anything for a resource outside the transaction (memory):
// there, a holder whose session died keeps working unaware. No lease, no
// fence. A write made in the transaction takes effect at the release's
// COMMIT: the history marks it `tx`, and the checkers judge it by that
// release's outcome (a failed COMMIT rolled it back).
func init() {
	registerPG(Info{
		Name:        "pg-advisory-xact",
		InTx:        true,
		Description: "PostgreSQL transaction-level advisory lock held in an open transaction; with the postgres resource the write commits with the release",
	}, nil, func(s *pgSession) Client { return &pgAdvisoryXactClient{pgSession: s} })
}

type pgAdvisoryXactClient struct {
	*pgSession
}

func (c *pgAdvisoryXactClient) Acquire(ctx context.Context, key string) (Grant, error) {
	return pgBegin(ctx, c.pgSession, "acquire "+key, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		var got bool
		err := tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1)", pgLockID(key)).Scan(&got)
		return got, err
	})
}

func (c *pgAdvisoryXactClient) Release(ctx context.Context, key string, g Grant) error {
	return pgCommit(ctx, c.pgSession, key, g)
}
