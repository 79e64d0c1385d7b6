package backends

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"
)

// mysql-for-update locks the key's row of a table (mysqlLocksTable, one
// row per key) in a transaction held for the critical section: BEGIN;
// SELECT key FROM locktorture_locks WHERE key = ? FOR UPDATE NOWAIT. A row
// another transaction holds fails at once: busy (rolled back). COMMIT is
// the release. The grant's Conn is a *MySQLTx, so the mysql resource reads
// and writes in the lock's own transaction, committing with the release.
//
// Guarantees: the row lock lasts while the session and its transaction
// do, however long the client pauses; with the mysql resource no write of
// a holder whose session ended (killed, timed out) can commit — it rolls
// back with the lock. Does not protect a resource outside the
// transaction from a holder whose session ended unnoticed. No lease, no
// fence.
func init() {
	registerMySQL(Info{
		Name:        "mysql-for-update",
		InTx:        true,
		Description: "lock the key's row with SELECT ... FOR UPDATE NOWAIT in a MySQL/MariaDB transaction held for the critical section",
	}, mysqlSetupLocks, func(s *mysqlSession) Client { return &mysqlForUpdateClient{mysqlSession: s} })
}

type mysqlForUpdateClient struct {
	*mysqlSession
}

func (c *mysqlForUpdateClient) Acquire(ctx context.Context, key string) (Grant, error) {
	if c.inTx {
		// A transaction left open by a critical section that never
		// released (the run was ending): start from a fresh session.
		c.drop()
	}
	err := c.run(ctx, func(conn *sql.Conn) error {
		_, err := conn.ExecContext(ctx, "BEGIN")
		return err
	})
	if err != nil {
		return Grant{}, mysqlFail("begin", err)
	}
	c.inTx = true
	var k string
	err = c.conn.QueryRowContext(ctx, "SELECT `key` FROM "+mysqlLocksTable+" WHERE `key` = ? FOR UPDATE NOWAIT", key).Scan(&k)
	switch {
	case lockWait(err):
		if _, err := c.conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			c.drop() // the row was not locked either way
		}
		c.inTx = false
		return Grant{}, ErrBusy
	case errors.Is(err, sql.ErrNoRows):
		c.drop()
		return Grant{}, Certain(fmt.Errorf("acquire %s: no row for the key in %s", key, mysqlLocksTable))
	case err != nil:
		c.drop()
		return Grant{}, mysqlFail("acquire "+key, err)
	}
	return Grant{Conn: &MySQLTx{Conn: c.conn}}, nil
}

func (c *mysqlForUpdateClient) Release(ctx context.Context, key string, g Grant) error {
	tx, ok := g.Conn.(*MySQLTx)
	if !ok {
		return Certain(fmt.Errorf("release %s: the grant holds no transaction", key))
	}
	if c.conn == nil || c.conn != tx.Conn || !c.inTx {
		return fmt.Errorf("release %s: %w: the session ended, so the server rolled the transaction back", key, ErrNotHeld)
	}
	end := "COMMIT"
	if tx.aborted.Load() {
		end = "ROLLBACK" // a step failed: nothing of the hold takes effect
	}
	_, err := c.conn.ExecContext(ctx, end)
	c.inTx = false
	if err == nil {
		return nil
	}
	c.drop()
	var me *mysql.MySQLError
	switch {
	case idleEnd(err):
		return fmt.Errorf("release %s: %w: the session had ended (%w), so the server rolled the transaction back", key, ErrNotHeld, err)
	case errors.As(err, &me):
		// The server answered with an error: the transaction rolled
		// back, freeing the row.
		return fmt.Errorf("release %s: %w: %s failed, so the transaction rolled back: %w", key, ErrNotHeld, end, err)
	}
	return fmt.Errorf("release %s: %s: %w", key, end, err)
}
