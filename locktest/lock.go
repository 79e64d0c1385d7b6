package locktest

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors a Lock returns. Any other error from Acquire or Release
// means "we do not know whether it happened" (a timeout, a lost
// connection): the history records it as such, never as a failure.
var (
	// ErrBusy is returned by Acquire when someone else holds the lock: it
	// certainly was not taken.
	ErrBusy = errors.New("locktest: lock is busy")
	// ErrNotHeld is returned by Release (or reported by an extension) when
	// the lock was no longer ours.
	ErrNotHeld = errors.New("locktest: lock is not held")
)

// Lock is the user's lock client, one per simulated client process, with
// connections of its own. Keys are plain strings such as "k0" (with a
// namespace prefix when servers are shared); use them as they are. Its
// methods are called one at a time; the package doc's "Writing a Lock"
// says how (contexts, Lost, leases, locks that can only block).
type Lock interface {
	// Acquire tries once to take the lock on key. It returns ErrBusy when
	// the lock is held by someone else; any other error means the lock may
	// or may not have been taken.
	Acquire(ctx context.Context, key string) (Grant, error)
	// Release gives the lock on key back: ErrNotHeld when it was no longer
	// ours.
	Release(ctx context.Context, key string) error
	// Close drops the client's connections and stops its goroutines.
	Close() error
}

// Grant is what a successful Acquire returns.
type Grant struct {
	// Lease is how long, from Acquire's return, the client may assume it
	// holds the lock by its own reckoning (usually the TTL less the time
	// the acquire took, less a margin; negative when it ran out before
	// Acquire returned); zero for a lock without a lease. The checkers
	// count it from the moment the harness hears of the grant, a little
	// after Acquire returns (longer on a loaded machine): a lease with no
	// margin can make a stale holder look like a double grant. Leave one,
	// as Redlock does (a tenth of the TTL is plenty).
	Lease time.Duration
	// Fence is the grant's fencing token when Fenced is set: a number that
	// grows with every grant of the key, which the protected resource
	// checks to reject a stale holder's writes.
	Fence  int64
	Fenced bool
}

// NewLock builds one client's lock from what the suite gives it. It is
// called once per simulated client, inside that client's process.
type NewLock func(ctx context.Context, cfg Config) (Lock, error)

// Config is what NewLock gets: the servers the suite started (the addresses
// this client dials), the scenario's lease and request timeout, and the
// credentials the servers ask for.
type Config struct {
	// Servers are this client's addresses of the servers, by kind.
	Servers Servers
	// TTL is the lease to ask for; Timeout bounds each request (Acquire's
	// and Release's contexts carry it too).
	TTL, Timeout time.Duration
	// Process is the client's number, from 0.
	Process int
	// Auth holds credentials by kind of server (KindRedis, KindEtcd,
	// KindZooKeeper, KindSentinel): one entry for every server of the kind,
	// or one per address in the order of Servers (Credentials picks).
	// The servers the suite starts ask for them, as those of a
	// locktorture run do, each with a random password of its own: Redis
	// and Sentinel an ACL user (a lock that connects without it is
	// refused NOAUTH), etcd its user root, ZooKeeper a digest user
	// (Scheme "digest" and Auth "user:pass": conn.AddAuth, and znodes
	// made with zk.AuthACL). PostgreSQL's password is in its connection
	// string. Servers of a servers file (LOCKTEST_SERVERS) ask for what
	// the file says.
	Auth map[string][]Credentials

	events *events
}

// Credentials are what server i of kind (KindRedis, KindSentinel, KindEtcd,
// KindZooKeeper, KindPostgres; i indexes Servers' list of the kind, or
// Sentinel.Addrs) asks this client to prove: Auth's one entry for every
// server of the kind, or its entry i; the zero Credentials when the
// server asks for nothing.
func (c Config) Credentials(kind string, i int) Credentials {
	l := c.Auth[kind]
	switch {
	case len(l) == 1:
		return l[0]
	case i >= 0 && i < len(l):
		return l[i]
	}
	return Credentials{}
}

// Servers are the addresses of the servers, by kind. Only the kinds the
// suite's Kinds name are set.
type Servers struct {
	// Redis are Redis servers' host:port.
	Redis []string
	// Sentinel is a Sentinel group watching a primary and its replica
	// (scenarios with redis: sentinel, such as failover); the primary and
	// replica are then in Redis, primary first.
	Sentinel *Sentinel
	// Postgres is a PostgreSQL connection string (postgres://...).
	Postgres string
	// Etcd are etcd members' client host:port.
	Etcd []string
	// ZooKeeper are ZooKeeper servers' host:port.
	ZooKeeper []string
}

// Sentinel is a Redis Sentinel group.
type Sentinel struct {
	// Master is the name the Sentinels monitor the primary under.
	Master string
	// Addrs are the Sentinels' host:port.
	Addrs []string
}

// Credentials are what a server asks a client to prove.
type Credentials struct {
	// Username and Password (Redis ACL, etcd, Sentinel).
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	// TLS, when set, names PEM files the suite wrote.
	TLS *TLS `json:"tls,omitempty"`
	// Scheme and Auth are ZooKeeper's AddAuth arguments ("digest",
	// "user:pass").
	Scheme string `json:"scheme,omitempty"`
	Auth   string `json:"auth,omitempty"`
}

// TLS names the files of a TLS connection.
type TLS struct {
	CA         string `json:"ca,omitempty"`
	Cert       string `json:"cert,omitempty"`
	Key        string `json:"key,omitempty"`
	ServerName string `json:"server_name,omitempty"`
}

// Extended reports that the lock's own watchdog renewed its lease on key:
// err nil with the new lease, ErrNotHeld when the lock was no longer ours,
// another error when nobody knows. A lock without a watchdog never calls
// it. The checkers then count a hold's lease from the last renewal. With
// in-process clients it may wait, up to the request timeout, for the
// client's own request in flight to end (a client records one operation
// at a time); an event it cannot record then is dropped.
func (c Config) Extended(key string, lease time.Duration, err error) {
	if c.events != nil {
		c.events.extended(key, lease, err)
	}
}

// Lost reports that the lock's watchdog (or its library) gave the lock on
// key up: the client ends its critical section as soon as it can, then
// calls Release all the same. It may be called from any goroutine, and
// counts from Acquire's call for key until Release's (see the package doc,
// Writing a Lock).
func (c Config) Lost(key string) {
	if c.events != nil {
		c.events.lost(key)
	}
}

// events sends a client's unsolicited events (set by the suite).
type events struct {
	extended func(key string, lease time.Duration, err error)
	lost     func(key string)
}
