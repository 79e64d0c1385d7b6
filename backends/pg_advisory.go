package backends

import (
	"context"
	"fmt"
)

// pg-advisory is PostgreSQL's session-level advisory lock: each client holds
// one connection for its whole life, takes the lock with
// pg_try_advisory_lock(id) and gives it back with pg_advisory_unlock(id),
// where id is pgLockID(key).
//
// Guarantees: the server holds the lock for as long as the session lives,
// however long the client pauses, so a paused holder never sees another
// client get its lock. The lock lasts exactly as long as the session: when
// the connection drops (a timeout here closes it; a killed or terminated
// session; idle_session_timeout; a server crash) the server frees the lock
// at once, while the client may still be working in the belief that it
// holds it — nothing tells it until its next statement. No lease, and no
// fence: a resource outside PostgreSQL cannot tell a stale holder's write
// from the current holder's.
func init() {
	registerPG(Info{
		Name:        "pg-advisory",
		Description: "PostgreSQL session-level advisory lock (pg_try_advisory_lock / pg_advisory_unlock), one connection per client",
	}, nil, func(s *pgSession) Client { return &pgAdvisoryClient{pgSession: s} })
}

type pgAdvisoryClient struct {
	*pgSession
}

func (c *pgAdvisoryClient) Acquire(ctx context.Context, key string) (Grant, error) {
	conn, err := c.get(ctx)
	if err != nil {
		return Grant{}, err
	}
	var got bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", pgLockID(key)).Scan(&got); err != nil {
		// The lock may have been taken: closing the session frees it, so
		// it can never stay held by a session nobody uses.
		c.drop()
		return Grant{}, pgFail("acquire "+key, err)
	}
	if !got {
		return Grant{}, ErrBusy
	}
	return Grant{}, nil
}

func (c *pgAdvisoryClient) Release(ctx context.Context, key string, g Grant) error {
	if !c.alive() {
		c.drop()
		return fmt.Errorf("release %s: %w: the session ended, and the server freed its locks", key, ErrNotHeld)
	}
	var was bool
	if err := c.conn.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", pgLockID(key)).Scan(&was); err != nil {
		// Whatever happened, a closed session holds nothing.
		c.drop()
		return pgFail("release "+key, err)
	}
	if !was {
		return ErrNotHeld
	}
	return nil
}
