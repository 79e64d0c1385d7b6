package backends

import (
	"context"
	"database/sql"
	"fmt"
)

// mysql-get-lock is MySQL's and MariaDB's named lock, as golang-migrate,
// Rails and Laravel take it: each client holds one session for its whole
// life, takes the lock with GET_LOCK(name, 0) and gives it back with
// RELEASE_LOCK(name), where name is the run's database and the key
// (mariadb.MariaDB.LockName).
//
// Guarantees: the server holds the lock for as long as the session
// lives, however long the client pauses. The lock lasts exactly as long
// as the session: when it ends (a timeout here closes it; KILL
// CONNECTION; wait_timeout, which ends a session idle too long; a server
// crash) the server frees the lock at once, while the client may still be
// working in the belief that it holds it — nothing tells it until its
// next statement. No lease, no fence.
func init() {
	registerMySQL(Info{
		Name:        "mysql-get-lock",
		Description: "MySQL/MariaDB named lock (GET_LOCK / RELEASE_LOCK) on a session held by each client",
	}, nil, func(s *mysqlSession) Client { return &mysqlGetLockClient{mysqlSession: s} })
}

type mysqlGetLockClient struct {
	*mysqlSession
}

func (c *mysqlGetLockClient) Acquire(ctx context.Context, key string) (Grant, error) {
	var got sql.NullInt64
	err := c.run(ctx, func(conn *sql.Conn) error {
		return conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", c.m.LockName(key)).Scan(&got)
	})
	switch {
	case err != nil:
		// The lock may have been taken: the session is closed, which
		// frees it, so it can never stay held by a session nobody uses.
		return Grant{}, mysqlFail("acquire "+key, err)
	case !got.Valid:
		return Grant{}, Certain(fmt.Errorf("acquire %s: GET_LOCK returned NULL", key))
	case got.Int64 != 1:
		return Grant{}, ErrBusy
	}
	return Grant{}, nil
}

func (c *mysqlGetLockClient) Release(ctx context.Context, key string, g Grant) error {
	if c.conn == nil {
		return fmt.Errorf("release %s: %w: the session ended, and the server freed its locks", key, ErrNotHeld)
	}
	var was sql.NullInt64
	if err := c.conn.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", c.m.LockName(key)).Scan(&was); err != nil {
		c.drop()
		if idleEnd(err) {
			return fmt.Errorf("release %s: %w: the session had ended (%w), and the server freed its locks", key, ErrNotHeld, err)
		}
		return mysqlFail("release "+key, err)
	}
	if !was.Valid || was.Int64 != 1 {
		return ErrNotHeld
	}
	return nil
}
