package workload

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/cluster/kinds/mariadb"
)

// resourceMySQL is a row per key in the run's MariaDB.
const resourceMySQL = "mysql"

func init() {
	registerResource(resourceMySQL, func(ctx context.Context, env ResourceEnv) (Resource, error) {
		return newMySQLResource(ctx, env)
	})
}

// mysqlResource is the mysql resource: a row per key in
// backends.MySQLResourceTable holding the value, the highest fence seen
// and a version every accepted write bumps — the postgres resource's
// twin. Fences are enforced by the server, with conditional UPDATEs:
//
//   - none: every write is accepted.
//   - writes: a write carrying fence F succeeds only WHERE fence IS NULL OR
//     fence <= F, and records F; otherwise it is rejected, "stale fence F <
//     H" (H the highest fence).
//   - all: reads too record and check the fence (the UPDATE and the read
//     in one transaction).
//
// Grants without a fence are never checked. When the grant's Conn is a
// *backends.MySQLTx (mysql-for-update), reads and writes run inside the
// lock's own transaction and commit with the release; an error there
// makes the release roll the transaction back, so nothing of the hold
// takes effect: a certain failure. Otherwise the resource uses its own
// sessions.
type mysqlResource struct {
	mode string
	db   *sql.DB
}

// newMySQLResource starts (or joins) the run's MariaDB and creates the
// resource's table with a row per key.
func newMySQLResource(ctx context.Context, env ResourceEnv) (*mysqlResource, error) {
	if err := ValidFencing(env.Fencing); err != nil {
		return nil, err
	}
	m, err := mariadb.Start(ctx, env.Cluster)
	if err != nil {
		return nil, fmt.Errorf("workload: mysql resource: %w", err)
	}
	if err := backends.MySQLSetupResource(ctx, m, env.Keys); err != nil {
		return nil, fmt.Errorf("workload: mysql resource: %w", err)
	}
	cfg, err := m.Config(m.Addr())
	if err != nil {
		return nil, fmt.Errorf("workload: mysql resource: %w", err)
	}
	cfg.ClientFoundRows = true // RowsAffected counts the rows matched
	cfg.Timeout = postgresOpTimeout
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("workload: mysql resource: %w", err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(16)
	return &mysqlResource{mode: env.Fencing, db: db}, nil
}

// mysqlQuerier is what a statement runs on: the lock's session, a
// transaction of the resource's own, or its pool.
type mysqlQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

const (
	mysqlRead       = "SELECT value FROM " + backends.MySQLResourceTable + " WHERE `key` = ?"
	mysqlFenceRead  = "UPDATE " + backends.MySQLResourceTable + " SET fence = ? WHERE `key` = ? AND (fence IS NULL OR fence <= ?)"
	mysqlWrite      = "UPDATE " + backends.MySQLResourceTable + " SET value = ?, version = version + 1 WHERE `key` = ?"
	mysqlFenceWrite = "UPDATE " + backends.MySQLResourceTable + " SET value = ?, fence = ?, version = version + 1 WHERE `key` = ? AND (fence IS NULL OR fence <= ?)"
	mysqlHighest    = "SELECT fence FROM " + backends.MySQLResourceTable + " WHERE `key` = ?"
)

// in runs f inside the lock's transaction when g has one, else on the
// pool (atomic: in a transaction of the resource's own).
func (r *mysqlResource) in(ctx context.Context, g backends.Grant, atomic bool, f func(q mysqlQuerier) error) error {
	if tx, ok := g.Conn.(*backends.MySQLTx); ok {
		err := f(tx.Conn)
		if err != nil && !errors.Is(err, ErrStale) {
			tx.Abort()
			return backends.Certain(fmt.Errorf("%w (the lock's transaction rolls back at the release)", err))
		}
		return err
	}
	if !atomic {
		return r.fail(f(r.db))
	}
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return r.fail(err)
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		if errors.Is(err, ErrStale) {
			return err
		}
		return r.fail(err)
	}
	return r.fail(tx.Commit())
}

// Read implements Resource.
func (r *mysqlResource) Read(ctx context.Context, key string, g backends.Grant) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, postgresOpTimeout)
	defer cancel()
	var v int64
	fenced := r.mode == FenceAll && g.Fence != nil
	err := r.in(ctx, g, fenced, func(q mysqlQuerier) error {
		if fenced {
			res, err := q.ExecContext(ctx, mysqlFenceRead, *g.Fence, key, *g.Fence)
			if err != nil {
				return fmt.Errorf("mysql read %s: %w", key, err)
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				return r.stale(ctx, q, key, *g.Fence)
			}
		}
		if err := q.QueryRowContext(ctx, mysqlRead, key).Scan(&v); err != nil {
			return fmt.Errorf("mysql read %s: %w", key, err)
		}
		return nil
	})
	return v, err
}

// Write implements Resource.
func (r *mysqlResource) Write(ctx context.Context, key string, v int64, g backends.Grant) error {
	ctx, cancel := context.WithTimeout(ctx, postgresOpTimeout)
	defer cancel()
	return r.in(ctx, g, false, func(q mysqlQuerier) error {
		what := fmt.Sprintf("mysql write %d to %s", v, key)
		if r.mode == FenceNone || g.Fence == nil {
			if _, err := q.ExecContext(ctx, mysqlWrite, v, key); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			return nil
		}
		res, err := q.ExecContext(ctx, mysqlFenceWrite, v, *g.Fence, key, *g.Fence)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return r.stale(ctx, q, key, *g.Fence)
		}
		return nil
	})
}

// stale is the rejection of an access with fence f, naming the highest
// fence the row holds.
func (r *mysqlResource) stale(ctx context.Context, q mysqlQuerier, key string, f int64) error {
	var hi sql.NullInt64
	if err := q.QueryRowContext(ctx, mysqlHighest, key).Scan(&hi); err != nil || !hi.Valid {
		return fmt.Errorf("%w %d: below the highest fence of %s", ErrStale, f, key)
	}
	return fmt.Errorf("%w %d < %d", ErrStale, f, hi.Int64)
}

// fail maps an error of the resource's own sessions: a server error or
// an error before sending is certain; a timeout or lost connection is not.
func (r *mysqlResource) fail(err error) error {
	var me *mysql.MySQLError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &me), errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone):
		return backends.Certain(err)
	}
	return err
}

// FinalRead implements Resource: a plain read, bypassing fences.
func (r *mysqlResource) FinalRead(ctx context.Context, key string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, postgresOpTimeout)
	defer cancel()
	var v int64
	err := r.db.QueryRowContext(ctx, mysqlRead, key).Scan(&v)
	if err != nil {
		return 0, r.fail(fmt.Errorf("mysql final read %s: %w", key, err))
	}
	return v, nil
}

// Close implements Resource.
func (r *mysqlResource) Close() error { return r.db.Close() }

// InTx reports whether the resource acts inside the grant's transaction
// (mysql-for-update): its writes then commit, or not, with the release.
func (r *mysqlResource) InTx(g backends.Grant) bool {
	_, ok := g.Conn.(*backends.MySQLTx)
	return ok
}
