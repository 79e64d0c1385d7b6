package backends

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// pg-skip-locked is the job-queue claim: a table (pgLocksTable) with one
// row per key; a client claims a key with BEGIN; SELECT key FROM
// locktorture_locks WHERE key=$1 FOR UPDATE SKIP LOCKED. No row back means
// another transaction holds the row: busy (rolled back). The transaction
// stays open for the critical section and COMMIT is the release. The
// grant's Conn is the pgx.Tx, so the postgres resource reads and writes in
// the claim's own transaction, committing with the release.
//
// Guarantees: the row lock lasts while the session and its transaction
// do, however long the client pauses; with the postgres resource no write
// of a holder that lost its claim can commit. Does not protect a resource
// outside the transaction from a holder whose session died unnoticed. No
// lease, no fence.
func init() {
	registerPG(Info{
		Name:        "pg-skip-locked",
		InTx:        true,
		Description: "claim the key's row with SELECT ... FOR UPDATE SKIP LOCKED in a transaction held for the critical section",
	}, pgSetupLocks, func(s *pgSession) Client { return &pgSkipLockedClient{pgSession: s} })
}

type pgSkipLockedClient struct {
	*pgSession
}

func (c *pgSkipLockedClient) Acquire(ctx context.Context, key string) (Grant, error) {
	return pgBegin(ctx, c.pgSession, "acquire "+key, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		var k string
		err := tx.QueryRow(ctx, "SELECT key FROM "+pgLocksTable+" WHERE key = $1 FOR UPDATE SKIP LOCKED", key).Scan(&k)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		return err == nil, err
	})
}

func (c *pgSkipLockedClient) Release(ctx context.Context, key string, g Grant) error {
	return pgCommit(ctx, c.pgSession, key, g)
}
