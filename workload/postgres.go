package workload

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/cluster/kinds/postgres"
)

// ResourcePostgres is a row per key in the run's PostgreSQL, named for its kind.
const ResourcePostgres = postgres.Kind

func init() {
	registerResource(ResourcePostgres, func(ctx context.Context, env ResourceEnv) (Resource, error) {
		return newPostgresResource(ctx, env)
	})
}

// postgresOpTimeout bounds each statement of the resource, so a paused or
// partitioned server never hangs a client for good: past it the statement
// is abandoned (its connection closed) and the access is recorded as
// unknown — or, inside a lock's transaction, as failed.
const postgresOpTimeout = 5 * time.Second

// postgresResource is the postgres resource: a row per key in
// backends.PGResourceTable holding the value, the highest fence seen and a
// version every accepted write bumps. Fences are enforced by the server,
// with conditional UPDATEs:
//
//   - none: every write is accepted.
//   - writes: a write carrying fence F succeeds only WHERE fence IS NULL OR
//     fence <= F, and records F; otherwise it is rejected, "stale fence F <
//     H" (H the highest fence).
//   - all: reads too record and check the fence (UPDATE ... SET fence=F
//     WHERE fence IS NULL OR fence <= F RETURNING value).
//
// Grants without a fence are never checked. When the grant's Conn is a
// pgx.Tx (pg-advisory-xact, pg-skip-locked), reads and writes run inside
// the lock's own transaction and commit with the release; an error there
// means that transaction will never commit, so it is a certain failure.
// When it is a backends.PGVersion (pg-optimistic), the write is a
// compare-and-set on the version read at acquire, whatever the fencing
// mode. Otherwise the resource uses its own connections (to the resource's
// own pool of the PgBouncer in front of the server, with postgres: {via: pgbouncer}).
type postgresResource struct {
	mode string
	pool *pgxpool.Pool
}

// newPostgresResource starts (or joins) the run's PostgreSQL and creates the
// resource's table with a row per key.
func newPostgresResource(ctx context.Context, env ResourceEnv) (*postgresResource, error) {
	if err := ValidFencing(env.Fencing); err != nil {
		return nil, err
	}
	pg, err := postgres.Start(ctx, env.Cluster, env.Postgres)
	if err != nil {
		return nil, fmt.Errorf("workload: postgres resource: %w", err)
	}
	if err := backends.PGSetupResource(ctx, pg, env.Keys); err != nil {
		return nil, fmt.Errorf("workload: postgres resource: %w", err)
	}
	cfg, err := pgxpool.ParseConfig(postgres.ResourceDSN(env.Cluster, pg))
	if err != nil {
		return nil, fmt.Errorf("workload: postgres resource: %w", err)
	}
	cfg.MaxConns = 16
	cfg.ConnConfig.ConnectTimeout = postgresOpTimeout
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("workload: postgres resource: %w", err)
	}
	return &postgresResource{mode: env.Fencing, pool: pool}, nil
}

// querier is what a statement runs on: the lock's transaction or the pool.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// on picks where g's statements run: the lock's transaction or the pool.
func (r *postgresResource) on(g backends.Grant) querier {
	if tx, ok := g.Conn.(pgx.Tx); ok {
		return tx
	}
	return r.pool
}

const (
	sqlRead       = `SELECT value FROM ` + backends.PGResourceTable + ` WHERE key = $1`
	sqlFencedRead = `UPDATE ` + backends.PGResourceTable + ` SET fence = $2 WHERE key = $1 AND (fence IS NULL OR fence <= $2) RETURNING value`
	sqlWrite      = `UPDATE ` + backends.PGResourceTable + ` SET value = $2, version = version + 1 WHERE key = $1`
	sqlFenceWrite = `UPDATE ` + backends.PGResourceTable + ` SET value = $2, fence = $3, version = version + 1 WHERE key = $1 AND (fence IS NULL OR fence <= $3)`
	sqlCASWrite   = `UPDATE ` + backends.PGResourceTable + ` SET value = $2, version = version + 1 WHERE key = $1 AND version = $3`
	sqlHighest    = `SELECT fence, version FROM ` + backends.PGResourceTable + ` WHERE key = $1`
)

// Read implements Resource.
func (r *postgresResource) Read(ctx context.Context, key string, g backends.Grant) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, postgresOpTimeout)
	defer cancel()
	q := r.on(g)
	_, optimistic := g.Conn.(backends.PGVersion)
	var v int64
	if r.mode == FenceAll && g.Fence != nil && !optimistic {
		err := q.QueryRow(ctx, sqlFencedRead, key, *g.Fence).Scan(&v)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, r.stale(ctx, q, key, *g.Fence)
		}
		return v, r.fail("read "+key, err, q)
	}
	err := q.QueryRow(ctx, sqlRead, key).Scan(&v)
	return v, r.fail("read "+key, err, q)
}

// Write implements Resource.
func (r *postgresResource) Write(ctx context.Context, key string, v int64, g backends.Grant) error {
	ctx, cancel := context.WithTimeout(ctx, postgresOpTimeout)
	defer cancel()
	q := r.on(g)
	what := fmt.Sprintf("write %d to %s", v, key)
	if ver, ok := g.Conn.(backends.PGVersion); ok {
		tag, err := q.Exec(ctx, sqlCASWrite, key, v, ver.Version)
		if err != nil {
			return r.fail(what, err, q)
		}
		if tag.RowsAffected() == 0 {
			var fence *int64
			var now int64
			if err := q.QueryRow(ctx, sqlHighest, key).Scan(&fence, &now); err != nil {
				return fmt.Errorf("%w: version %d is no longer current: another write got in first", ErrStale, ver.Version)
			}
			return fmt.Errorf("%w: version %d is no longer current (now %d): another write got in first", ErrStale, ver.Version, now)
		}
		return nil
	}
	if r.mode == FenceNone || g.Fence == nil {
		_, err := q.Exec(ctx, sqlWrite, key, v)
		return r.fail(what, err, q)
	}
	tag, err := q.Exec(ctx, sqlFenceWrite, key, v, *g.Fence)
	if err != nil {
		return r.fail(what, err, q)
	}
	if tag.RowsAffected() == 0 {
		return r.stale(ctx, q, key, *g.Fence)
	}
	return nil
}

// stale is the rejection of an access with fence f, naming the highest
// fence the row holds.
func (r *postgresResource) stale(ctx context.Context, q querier, key string, f int64) error {
	var hi *int64
	var ver int64
	if err := q.QueryRow(ctx, sqlHighest, key).Scan(&hi, &ver); err != nil || hi == nil {
		return fmt.Errorf("%w %d: below the highest fence of %s", ErrStale, f, key)
	}
	return fmt.Errorf("%w %d < %d", ErrStale, f, *hi)
}

// fail maps a statement's error. Inside the lock's transaction any error
// means the transaction will never commit (a server error aborts it; a
// timeout or lost connection ends the session, which rolls it back), so
// nothing of it can take effect: certain. On its own, a server error or an
// error before sending is certain; a timeout or lost connection is not.
func (r *postgresResource) fail(what string, err error, q querier) error {
	if err == nil {
		return nil
	}
	err = fmt.Errorf("postgres %s: %w", what, err)
	var pe *pgconn.PgError
	if errors.As(err, &pe) || pgconn.SafeToRetry(err) {
		return backends.Certain(err)
	}
	if tx, ok := q.(pgx.Tx); ok && (tx.Conn() == nil || tx.Conn().IsClosed()) {
		return backends.Certain(fmt.Errorf("%w (the lock's session ended, rolling its transaction back)", err))
	}
	return err
}

// FinalRead implements Resource: a plain read, bypassing fences.
func (r *postgresResource) FinalRead(ctx context.Context, key string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, postgresOpTimeout)
	defer cancel()
	var v int64
	err := r.pool.QueryRow(ctx, sqlRead, key).Scan(&v)
	return v, r.fail("final read "+key, err, r.pool)
}

// Close implements Resource.
func (r *postgresResource) Close() error {
	r.pool.Close()
	return nil
}

// InTx reports whether the resource acts inside the grant's transaction
// (pg-advisory-xact, pg-skip-locked): its writes then commit, or not,
// with the release.
func (r *postgresResource) InTx(g backends.Grant) bool {
	_, ok := g.Conn.(pgx.Tx)
	return ok
}
