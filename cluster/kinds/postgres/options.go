package postgres

import (
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/duration"
)

// Options are the server settings of a run's PostgreSQL: a
// scenario's postgres block (`postgres: {via: pgbouncer,
// idle_session_timeout: 2s}`). The zero value is a fast throwaway
// server: fsync and full_page_writes off. That loses nothing when the
// server is killed (every commit is still written to the operating
// system before it returns); only an operating system crash could lose
// data. synchronous_commit stays on by default for that reason: with it
// off, a kill -9 loses the last fraction of a second of commits, and a
// kill nemesis would then report lost updates that the lock did not
// cause.
type Options struct {
	// Via puts a pooler in front of the server: ViaPgBouncer, or "" (the
	// clients dial the server). Its settings are the pgbouncer block's
	// (PgBouncerOptions); the older spelling is postgres_via.
	Via string `yaml:"via,omitempty"`
	// IdleSessionTimeout ends a session idle outside a transaction this
	// long (and so frees its session-level locks); zero means never.
	IdleSessionTimeout duration.Duration `yaml:"idle_session_timeout,omitempty"`
	// IdleInTransactionSessionTimeout ends a session idle inside a
	// transaction this long; zero means never.
	IdleInTransactionSessionTimeout duration.Duration `yaml:"idle_in_transaction_session_timeout,omitempty"`
	// TCPKeepalivesIdle, TCPKeepalivesInterval and TCPKeepalivesCount are
	// the server's keepalives on client connections, which decide how soon
	// it notices a client that vanished (a partition) and frees its
	// locks; zero means the operating system's default. Rounded up to
	// whole seconds.
	TCPKeepalivesIdle     duration.Duration `yaml:"tcp_keepalives_idle,omitempty"`
	TCPKeepalivesInterval duration.Duration `yaml:"tcp_keepalives_interval,omitempty"`
	TCPKeepalivesCount    int               `yaml:"tcp_keepalives_count,omitempty"`
	// Durable turns fsync and full_page_writes back on.
	Durable bool `yaml:"durable,omitempty"`
	// Settings are further server settings, name to value, as
	// postgresql.conf would spell them ("lock_timeout": "2s").
	Settings map[string]string `yaml:"settings,omitempty"`
	// AsyncCommit sets synchronous_commit off: faster commits, but a killed
	// server forgets the last ones it acknowledged.
	AsyncCommit bool `yaml:"-"`
	// MaxConnections is max_connections; zero means 100.
	MaxConnections int `yaml:"-"`
	// Bouncer, when its pool mode is set, puts a PgBouncer in front of
	// the server (pgbouncer.go): the clients of every PostgreSQL backend
	// and the postgres resource dial it instead. RunOptions sets it from
	// Via and the pgbouncer block.
	Bouncer PgBouncerOptions `yaml:"-"`
}

// Check refuses a pooler the harness does not run.
func (o *Options) Check() error {
	if o.Via != "" && o.Via != ViaPgBouncer {
		return &cluster.KeyError{Key: "via", Msg: fmt.Sprintf("unknown via %q (%s, or leave it out to dial PostgreSQL itself)", o.Via, ViaPgBouncer)}
	}
	return nil
}

// ViaPgBouncer is the only value of Options.Via that puts
// something in front of the server.
const ViaPgBouncer = PgBouncerKind

// PgBouncer's pool modes (PgBouncerOptions.PoolMode).
const (
	// PoolSession gives a client one server connection from its first
	// statement until it disconnects; the connection is then reset
	// (DISCARD ALL, which also frees session-level advisory locks) and
	// handed to the next client.
	PoolSession = "session"
	// PoolTransaction gives a client a server connection for one
	// transaction only (a statement outside a transaction is one): its
	// next transaction may run on another server connection, and the
	// previous one may serve another client meanwhile. Session state — a
	// session-level advisory lock among it — stays on the server
	// connection it was made on, not with the client.
	PoolTransaction = "transaction"
)

// PgBouncerOptions put a PgBouncer in front of the run's PostgreSQL:
// every client of a PostgreSQL backend, and the postgres resource,
// dials it instead of the server. A scenario's pgbouncer block
// (`pgbouncer: {pool_mode: transaction, pool_size: 2}`; the older
// spellings pool_mode and pool_size).
type PgBouncerOptions struct {
	// PoolMode is PoolSession (the default) or PoolTransaction.
	PoolMode string `yaml:"pool_mode,omitempty" json:"pool_mode,omitempty"`
	// PoolSize is how many server connections the clients' pool keeps at
	// most (default_pool_size): fewer than the clients makes them share.
	// Zero means one per client in session mode (a client keeps its
	// server connection while it stays connected: with fewer, the others
	// would wait for one) and half the clients, at least one, in
	// transaction mode.
	PoolSize int `yaml:"pool_size,omitempty" json:"pool_size,omitempty"`
	// Clients is the number of client processes (for PoolSize's default).
	Clients int `yaml:"-" json:"clients,omitempty"`
}

// UnmarshalYAML decodes a scenario's pgbouncer block, refusing a
// pool_size of 0 (the default is to leave it out).
func (o *PgBouncerOptions) UnmarshalYAML(n *yaml.Node) error {
	type plain PgBouncerOptions
	if err := n.Decode((*plain)(o)); err != nil {
		return err
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Value == "pool_size" && o.PoolSize == 0 {
			return fmt.Errorf("line %d: %s: pool_size must be 1 or more, not 0 (leave it out for the default)", k.Line, PgBouncerKind)
		}
	}
	return nil
}

// Check refuses an unknown pool mode and a negative pool size.
func (o *PgBouncerOptions) Check() error {
	if o.PoolMode != "" {
		if err := CheckPoolMode(o.PoolMode); err != nil {
			return &cluster.KeyError{Key: "pool_mode", Msg: err.Error()}
		}
	}
	if o.PoolSize < 0 {
		return &cluster.KeyError{Key: "pool_size", Msg: fmt.Sprintf("pool_size must be 1 or more, not %d", o.PoolSize)}
	}
	return nil
}

// CheckPoolMode says what is wrong with a pool mode.
func CheckPoolMode(mode string) error {
	if mode != PoolSession && mode != PoolTransaction {
		return fmt.Errorf("pool_mode %q is not %s or %s", mode, PoolSession, PoolTransaction)
	}
	return nil
}

// RunOptions are the run's PostgreSQL settings in o (its postgres
// block's), with, when Via puts a PgBouncer in front, that PgBouncer's
// (the pgbouncer block's) in Bouncer.
func RunOptions(o cluster.StartOptions) Options {
	p := cluster.OptionsOf[Options](o, Kind)
	if p.Via == ViaPgBouncer {
		p.Bouncer = bouncerOptions(o)
	}
	return p
}

// bouncerOptions are the run's PgBouncer settings in o (session mode
// unless its block says), its pool sized for the run's clients.
func bouncerOptions(o cluster.StartOptions) PgBouncerOptions {
	b := cluster.OptionsOf[PgBouncerOptions](o, PgBouncerKind)
	if b.PoolMode == "" {
		b.PoolMode = PoolSession
	}
	b.Clients = o.Clients
	return b
}
