package backends

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/locktorture/locktorture/cluster/kinds/postgres"
)

// What the PostgreSQL backends share: the run's one server, lock ids hashed
// from key names, a session per client dialled through the client's own
// link, and the mapping of pgx errors to fail or info.

// Tables in the harness's database.
const (
	// PGResourceTable holds the postgres resource: one row per key with
	// its value, the highest fence seen (NULL before any) and a version
	// that every accepted write bumps (pg-optimistic's compare-and-set).
	PGResourceTable = "locktorture_resource"
	// pgLocksTable holds one row per key for pg-skip-locked to claim.
	pgLocksTable = "locktorture_locks"
)

// PGVersion is the Grant.Conn of pg-optimistic: no lock was taken, and
// Version is the row version the client read at acquire. The postgres
// resource, finding it, writes with a compare-and-set on that version
// (UPDATE ... WHERE key=$k AND version=$v), whatever its fencing mode, and
// rejects the write as stale when another write got in first.
type PGVersion struct {
	Version int64
}

// pgLockID is key's PostgreSQL advisory-lock id: the FNV-1a 64-bit hash of
// "locktorture:" followed by the key name, its bits read as a signed
// int64. It is stable across runs, machines and versions, so a lock can be
// found from outside: in pg_locks (locktype 'advisory', objsubid 1) classid
// holds the high 32 bits of the id and objid the low 32 bits.
func pgLockID(key string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("locktorture:" + key))
	return int64(h.Sum64())
}

// startPostgres starts (or joins) the run's PostgreSQL.
func startPostgres(ctx context.Context, env Env) (*postgres.Postgres, error) {
	pg, err := postgres.Start(ctx, env.Cluster, postgres.RunOptions(env.Servers))
	if err != nil {
		return nil, fmt.Errorf("backends: %w", err)
	}
	return pg, nil
}

// registerPG registers a PostgreSQL backend: every one runs over the
// run's one server (Servers and Kinds say so), sets it up once with setup
// (nil: nothing), and gives each client a session of its own that
// newClient wraps in the backend's way of locking.
func registerPG(info Info, setup func(ctx context.Context, pg *postgres.Postgres, keys []string) error, newClient func(*pgSession) Client) {
	info.Servers, info.Kinds = "1 postgres", []string{"postgres"}
	info.Tables = setup != nil
	Register(info, func(ctx context.Context, env Env) (Backend, error) {
		pg, err := startPostgres(ctx, env)
		if err != nil {
			return nil, err
		}
		if setup != nil {
			if err := setup(ctx, pg, env.Keys); err != nil {
				return nil, err
			}
		}
		return &pgBackend{env: env, pg: pg, newClient: newClient}, nil
	})
}

// pgBackend is a PostgreSQL backend (registerPG).
type pgBackend struct {
	env       Env
	pg        *postgres.Postgres
	newClient func(*pgSession) Client
}

// Client connects process c.Process's session.
func (b *pgBackend) Client(ctx context.Context, c ClientEnv) (Client, error) {
	s, err := newPGSession(ctx, b.env, c.Process, b.pg)
	if err != nil {
		return nil, err
	}
	return b.newClient(s), nil
}

// Close leaves the server to the cluster.
func (b *pgBackend) Close() error { return nil }

// PGSetupResource creates the postgres resource's table with a row (value
// 0, no fence, version 0) for each key; it runs once per server and set
// of keys.
func PGSetupResource(ctx context.Context, pg *postgres.Postgres, keys []string) error {
	return pg.Setup(ctx, PGResourceTable+" "+keysID(keys),
		`CREATE TABLE IF NOT EXISTS `+PGResourceTable+` (
			key     text PRIMARY KEY,
			value   bigint NOT NULL DEFAULT 0,
			fence   bigint,
			version bigint NOT NULL DEFAULT 0)`,
		`INSERT INTO `+PGResourceTable+` (key) SELECT unnest(`+sqlTextArray(keys)+`) ON CONFLICT DO NOTHING`)
}

// pgSetupLocks creates pg-skip-locked's table with a row for each key.
func pgSetupLocks(ctx context.Context, pg *postgres.Postgres, keys []string) error {
	return pg.Setup(ctx, pgLocksTable+" "+keysID(keys),
		`CREATE TABLE IF NOT EXISTS `+pgLocksTable+` (key text PRIMARY KEY)`,
		`INSERT INTO `+pgLocksTable+` (key) SELECT unnest(`+sqlTextArray(keys)+`) ON CONFLICT DO NOTHING`)
}

// keysID names a set of keys for Setup.
func keysID(keys []string) string {
	h := fnv.New64a()
	for _, k := range keys {
		_, _ = h.Write([]byte(k))
		_, _ = h.Write([]byte{0})
	}
	return fmt.Sprintf("%d:%016x", len(keys), h.Sum64())
}

// sqlTextArray writes keys as an SQL text[] literal.
func sqlTextArray(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = "'" + strings.ReplaceAll(k, "'", "''") + "'"
	}
	return "ARRAY[" + strings.Join(q, ",") + "]::text[]"
}

// pgSession is one client process's connection to the server (or to the
// PgBouncer in front of it), dialled through the client's link and named
// after the process in
// pg_stat_activity. After any error that may have left it in doubt it is
// closed (the server then ends the session and frees its locks) and the
// next operation dials again.
type pgSession struct {
	dsn     string
	timeout time.Duration
	conn    *pgx.Conn
}

// newPGSession makes process p's session to pg and connects it.
func newPGSession(ctx context.Context, env Env, p int, pg *postgres.Postgres) (*pgSession, error) {
	s := &pgSession{
		dsn:     postgres.ClientDSN(env.Cluster, pg, p),
		timeout: env.OpTimeout,
	}
	// The first connection is made before the run's clock starts: it is
	// bounded by pgSetupConnect, not by the requests' timeout (a
	// SCRAM handshake on a loaded machine took longer than a 500ms
	// timeout, and the run was a harness error before it began).
	cctx, cancel := context.WithTimeout(ctx, pgSetupConnect)
	defer cancel()
	if _, err := s.dial(cctx, pgSetupConnect); err != nil {
		return nil, fmt.Errorf("backends: process %d: %w", p, err)
	}
	return s, nil
}

// pgSetupConnect bounds a client's first connection, made while the run
// is set up.
const pgSetupConnect = 10 * time.Second

// get returns the live connection, dialling a new one if there is none
// within the requests' timeout. A failed dial is certain: no statement
// was sent, so no lock was taken.
func (s *pgSession) get(ctx context.Context) (*pgx.Conn, error) {
	return s.dial(ctx, s.timeout)
}

// dial is get with the connection's own time limit (zero: pgx's).
func (s *pgSession) dial(ctx context.Context, limit time.Duration) (*pgx.Conn, error) {
	if s.conn != nil && !s.conn.IsClosed() {
		return s.conn, nil
	}
	s.conn = nil
	cfg, err := pgx.ParseConfig(s.dsn)
	if err != nil {
		return nil, Certain(fmt.Errorf("postgres dsn: %w", err))
	}
	if limit > 0 {
		cfg.ConnectTimeout = limit
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, Certain(fmt.Errorf("connect: %w", err))
	}
	s.conn = conn
	return conn, nil
}

// alive reports whether the session's connection is up.
func (s *pgSession) alive() bool { return s.conn != nil && !s.conn.IsClosed() }

// drop closes the connection: the server ends the session, rolling back
// its transaction and freeing every lock it held.
func (s *pgSession) drop() {
	if s.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = s.conn.Close(ctx)
	s.conn = nil
}

// Close implements the Client's Close for the PostgreSQL clients.
func (s *pgSession) Close() error {
	s.drop()
	return nil
}

// pgFail maps the error of a statement run on its own: a server error
// (the statement failed, so it was rolled back) or an error raised before
// anything was sent is certain; anything else (a timeout, a lost
// connection) leaves it unknown whether the statement took effect.
func pgFail(what string, err error) error {
	err = fmt.Errorf("%s: %w", what, err)
	var pe *pgconn.PgError
	if errors.As(err, &pe) || pgconn.SafeToRetry(err) {
		return Certain(err)
	}
	return err
}

// pgBegin opens a transaction on the session and runs claim in it: claim
// reports whether it got the lock. The transaction stays open as the
// grant's Conn (its COMMIT is the release); a lost claim rolls back and is
// ErrBusy. Any error drops the session, which rolls the transaction back on
// the server.
func pgBegin(ctx context.Context, s *pgSession, what string, claim func(context.Context, pgx.Tx) (bool, error)) (Grant, error) {
	conn, err := s.get(ctx)
	if err != nil {
		return Grant{}, err
	}
	if conn.PgConn().TxStatus() != 'I' {
		// A transaction left open by a critical section that never
		// released (the run was ending): start from a fresh session.
		s.drop()
		if conn, err = s.get(ctx); err != nil {
			return Grant{}, err
		}
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		s.drop()
		return Grant{}, pgFail("begin", err)
	}
	got, err := claim(ctx, tx)
	if err != nil {
		s.drop()
		return Grant{}, pgFail(what, err)
	}
	if !got {
		if err := tx.Rollback(ctx); err != nil {
			s.drop() // the lock was not taken either way
		}
		return Grant{}, ErrBusy
	}
	return Grant{Conn: tx}, nil
}

// pgCommit releases a transaction-scoped lock by committing its
// transaction. A transaction whose statement failed commits as a rollback:
// the lock is released all the same. When the session had already ended,
// the server rolled the transaction back and freed the lock: ErrNotHeld.
func pgCommit(ctx context.Context, s *pgSession, key string, g Grant) error {
	tx, ok := g.Conn.(pgx.Tx)
	if !ok {
		return Certain(fmt.Errorf("release %s: the grant holds no transaction", key))
	}
	if tx.Conn() == nil || tx.Conn().IsClosed() {
		s.drop()
		return fmt.Errorf("release %s: %w: the session ended, so the server rolled the transaction back", key, ErrNotHeld)
	}
	err := tx.Commit(ctx)
	switch {
	case err == nil, errors.Is(err, pgx.ErrTxCommitRollback):
		return nil
	case errors.Is(err, pgx.ErrTxClosed):
		return fmt.Errorf("release %s: %w: the transaction had already ended", key, ErrNotHeld)
	case errors.As(err, new(*pgconn.PgError)):
		// The server answered COMMIT with an error (a terminated session
		// gets FATAL): the transaction rolled back, freeing the lock.
		s.drop()
		return fmt.Errorf("release %s: %w: COMMIT failed, so the transaction rolled back: %w", key, ErrNotHeld, err)
	case pgconn.SafeToRetry(err):
		// COMMIT never left: dropping the session rolls it back.
		s.drop()
		return fmt.Errorf("release %s: %w: COMMIT was not sent (%w); the session is closed, rolling the transaction back", key, ErrNotHeld, err)
	}
	s.drop()
	return fmt.Errorf("release %s: commit: %w", key, err)
}
