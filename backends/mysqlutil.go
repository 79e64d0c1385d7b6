package backends

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/locktorture/locktorture/cluster/kinds/mariadb"
)

// What the MariaDB backends share: the run's one server, a session per
// client dialled through the client's own link (holding the client's
// lock, by which a kill-session fault finds it), and the mapping of the
// driver's errors to fail or info.

// Tables in the run's MariaDB database.
const (
	// MySQLResourceTable holds the mysql resource: one row per key with
	// its value, the highest fence seen (NULL before any) and a version
	// that every accepted write bumps.
	MySQLResourceTable = "locktorture_resource"
	// mysqlLocksTable holds one row per key for mysql-for-update to lock.
	mysqlLocksTable = "locktorture_locks"
)

// mysqlOptions are the MariaDB backends' backend_options.
type mysqlOptions struct {
	// WaitTimeout is each lock session's wait_timeout: the server ends a
	// session idle this long, freeing what it held. Whole seconds; zero
	// leaves the server's (8 hours by default).
	WaitTimeout time.Duration `yaml:"wait_timeout"`
}

// Validate checks that wait_timeout is whole seconds, as MariaDB takes it.
func (o *mysqlOptions) Validate(Env) error {
	if o.WaitTimeout < 0 || o.WaitTimeout%time.Second != 0 {
		return fmt.Errorf("wait_timeout %s: MariaDB takes whole seconds (1s, 2s...)", o.WaitTimeout)
	}
	return nil
}

// MySQLTx is the Grant.Conn of mysql-for-update: the session whose open
// transaction holds the key's row lock. The mysql resource runs its
// statements on Conn, inside that transaction, which the release commits.
type MySQLTx struct {
	// Conn is the client's session, in the transaction.
	Conn    *sql.Conn
	aborted atomic.Bool
}

// Abort says a statement of the transaction failed: the release rolls it
// back instead of committing (the lock is released all the same), so
// nothing of a hold with a failed step takes effect.
func (t *MySQLTx) Abort() { t.aborted.Store(true) }

// MySQLSetupResource creates the mysql resource's table with a row (value
// 0, no fence, version 0) for each key; it runs once per server and set
// of keys.
func MySQLSetupResource(ctx context.Context, m *mariadb.MariaDB, keys []string) error {
	return m.Setup(ctx, MySQLResourceTable+" "+keysID(keys),
		"CREATE TABLE IF NOT EXISTS "+MySQLResourceTable+` (
			`+"`key`"+` VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PRIMARY KEY,
			value   BIGINT NOT NULL DEFAULT 0,
			fence   BIGINT NULL,
			version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB`,
		"INSERT IGNORE INTO "+MySQLResourceTable+" (`key`) VALUES "+sqlValues(keys))
}

// mysqlSetupLocks creates mysql-for-update's table with a row for each key.
func mysqlSetupLocks(ctx context.Context, m *mariadb.MariaDB, keys []string) error {
	return m.Setup(ctx, mysqlLocksTable+" "+keysID(keys),
		"CREATE TABLE IF NOT EXISTS "+mysqlLocksTable+" (`key` VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PRIMARY KEY) ENGINE=InnoDB",
		"INSERT IGNORE INTO "+mysqlLocksTable+" (`key`) VALUES "+sqlValues(keys))
}

// sqlValues writes keys as a VALUES list of one-column rows.
func sqlValues(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = "('" + strings.NewReplacer(`\`, `\\`, "'", "''").Replace(k) + "')"
	}
	return strings.Join(q, ",")
}

// registerMySQL registers a MariaDB backend: every one runs over the run's
// one server, sets it up once with setup (nil: nothing), and gives each
// client a session of its own that newClient wraps in the backend's way
// of locking. It takes mysqlOptions.
func registerMySQL(info Info, setup func(ctx context.Context, m *mariadb.MariaDB, keys []string) error, newClient func(*mysqlSession) Client) {
	info.Servers, info.Kinds = "1 mariadb", []string{"mariadb"}
	info.Options = func() Options { return &mysqlOptions{} }
	Register(info, func(ctx context.Context, env Env) (Backend, error) {
		m, err := mariadb.Start(ctx, env.Cluster)
		if err != nil {
			return nil, fmt.Errorf("backends: %w", err)
		}
		if setup != nil {
			if err := setup(ctx, m, env.Keys); err != nil {
				return nil, err
			}
		}
		return &mysqlBackend{env: env, m: m, newClient: newClient}, nil
	})
}

// mysqlBackend is a MariaDB backend (registerMySQL).
type mysqlBackend struct {
	env       Env
	m         *mariadb.MariaDB
	newClient func(*mysqlSession) Client
}

// Client connects process c.Process's session.
func (b *mysqlBackend) Client(ctx context.Context, c ClientEnv) (Client, error) {
	s, err := newMySQLSession(ctx, b.env, c.Process, b.m)
	if err != nil {
		return nil, err
	}
	return b.newClient(s), nil
}

// Close leaves the server to the cluster.
func (b *mysqlBackend) Close() error { return nil }

// mysqlSession is one client process's session to the server, dialled
// through the client's link. Its first statement takes the client's lock
// (mariadb.MariaDB.ClientLockName), held for the session's life. After
// any error that may have left it in doubt it is closed (the server then
// ends the session, rolling back its transaction and freeing its locks)
// and the next operation dials again.
type mysqlSession struct {
	m      *mariadb.MariaDB
	db     *sql.DB
	conn   *sql.Conn
	client string // the client lock's name
	inTx   bool   // a transaction is open on conn
}

// newMySQLSession makes process p's session to m and connects it.
func newMySQLSession(ctx context.Context, env Env, p int, m *mariadb.MariaDB) (*mysqlSession, error) {
	cfg, err := m.Config(env.Cluster.ClientAddr(p, m))
	if err != nil {
		return nil, fmt.Errorf("backends: process %d: %w", p, err)
	}
	if env.OpTimeout > 0 {
		cfg.Timeout = env.OpTimeout
	}
	// RowsAffected counts the rows matched (the mysql resource's fences).
	cfg.ClientFoundRows = true
	if o := envOptions(env, &mysqlOptions{}); o.WaitTimeout > 0 {
		if cfg.Params == nil {
			cfg.Params = map[string]string{}
		}
		cfg.Params["wait_timeout"] = strconv.FormatInt(int64(o.WaitTimeout/time.Second), 10)
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("backends: process %d: %w", p, err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxIdleConns(0) // a session given back is closed: it ends on the server
	s := &mysqlSession{m: m, db: db, client: m.ClientLockName(p)}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := s.get(cctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("backends: process %d: %w", p, err)
	}
	return s, nil
}

// get returns the live session, dialling a new one (and taking its client
// lock) if there is none. A failed dial is certain: no lock was taken.
func (s *mysqlSession) get(ctx context.Context) (*sql.Conn, error) {
	if s.conn != nil {
		return s.conn, nil
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, Certain(fmt.Errorf("connect: %w", err))
	}
	if _, err := conn.ExecContext(ctx, "DO GET_LOCK(?, 0)", s.client); err != nil {
		_ = conn.Close()
		return nil, Certain(fmt.Errorf("connect: take the client's lock: %w", err))
	}
	s.conn, s.inTx = conn, false
	return conn, nil
}

// drop closes the session: the server ends it, rolling back its
// transaction and freeing every lock it held.
func (s *mysqlSession) drop() {
	if s.conn == nil {
		return
	}
	_ = s.conn.Close()
	s.conn, s.inTx = nil, false
}

// Close implements the Client's Close for the MariaDB clients.
func (s *mysqlSession) Close() error {
	s.drop()
	return s.db.Close()
}

// idleEnd reports whether err says the session had ended before the
// statement was sent (the server closed it while idle: wait_timeout, a
// kill): nothing of the statement happened.
func idleEnd(err error) bool {
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone)
}

// mysqlFail maps the error of a statement run on its own: a server error
// (the statement failed) or one raised before anything was sent is
// certain; anything else (a timeout, a lost connection) leaves it unknown
// whether the statement took effect.
func mysqlFail(what string, err error) error {
	err = fmt.Errorf("%s: %w", what, err)
	var me *mysql.MySQLError
	if errors.As(err, &me) || idleEnd(err) {
		return Certain(err)
	}
	return err
}

// run runs one statement on the session, on a fresh session once more if
// the one it had had ended while idle (nothing was sent: no harm).
// Any error drops the session.
func (s *mysqlSession) run(ctx context.Context, stmt func(*sql.Conn) error) error {
	for attempt := 0; ; attempt++ {
		conn, err := s.get(ctx)
		if err != nil {
			return err
		}
		err = stmt(conn)
		if err == nil {
			return nil
		}
		s.drop()
		if attempt > 0 || !idleEnd(err) {
			return err
		}
	}
}

// lockWait reports whether err is a lock that NOWAIT would not wait for
// (MariaDB: 1205; MySQL 8: 3572).
func lockWait(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1205 || me.Number == 3572)
}
