package backends

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/zookeeper"
)

// zk-lock is go-zookeeper's own lock, github.com/go-zookeeper/zk's
// NewLock, driven through its public API as its doc shows: one zk.Conn
// (session) per client process, a fresh zk.NewLock(conn, path, acl) per
// acquisition (a Lock whose Unlock failed refuses to lock again:
// ErrDeadlock), Lock to take it and Unlock to give it back. Lock is the
// recipe: a protected ephemeral sequential node under the lock's path, the
// lowest holds, the others watch the node before theirs and wait. (The
// zookeeper backend is this project's own recipe over the same client, with
// a try-once acquire, a fence and Curator's handling of lost connections.)
//
// Its claim (the package doc): "Lock is a mutual exclusion lock", and
// Lock "will wait to return until the lock is acquired or an error
// occurs". It says nothing of sessions: the lock node is ephemeral, so
// ZooKeeper deletes it when the session ends (ZooKeeper's own
// documentation: "ephemeral znodes ... exist as long as the session that
// created the znode is active"), and the library tells the holder nothing
// then — no Lost here. The session lives while the library's own pings
// (every third of the session timeout) arrive.
//
// Lock waits and takes no context: an acquire waits until the request's
// time is up and then reports an unknown outcome (info), leaving Lock
// waiting in line; if the lock comes to it later, nobody holds it and it
// is given back at once. Release is Unlock: ErrNoNode (the session
// expired and took the node) is ErrNotHeld. Lease: the session timeout
// asked for (the scenario's TTL) less the time the acquire took. No fence
// (the lock node is not exported).
func init() {
	Register(Info{
		Name:         "zk-lock",
		Description:  "github.com/go-zookeeper/zk's own zk.NewLock (blocking Lock, Unlock), one session per client",
		Servers:      "1 or 3 zookeeper (Debian's zookeeper 3.8; zookeeper: {members: 3})",
		Kinds:        []string{"zookeeper"},
		Lease:        true,
		Library:      &Library{Name: "github.com/go-zookeeper/zk", Module: "github.com/go-zookeeper/zk", Language: "Go"},
		RenewsItself: true,
	}, newZKLock)
}

// zkLockRoot is the znode under which zk-lock keeps its locks: key k's
// lock is the path zkLockRoot+"/"+k, which the library creates.
const zkLockRoot = "/locktorture-zklock"

type zkLockBackend struct {
	env Env
	zk  *zookeeper.ZooKeeper
}

func newZKLock(ctx context.Context, env Env) (Backend, error) {
	z, err := zookeeper.Start(ctx, env.Cluster, cluster.OptionsOf[zookeeper.Options](env.Servers, zookeeper.Kind))
	if err != nil {
		return nil, fmt.Errorf("backends: %w", err)
	}
	return &zkLockBackend{env: env, zk: z}, nil
}

func (b *zkLockBackend) Close() error { return nil }

func (b *zkLockBackend) Client(ctx context.Context, ce ClientEnv) (Client, error) {
	var addrs []string
	for _, m := range b.zk.Members() {
		addrs = append(addrs, b.env.Cluster.ClientAddr(ce.Process, m))
	}
	life, cancel := context.WithCancel(context.Background())
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		conn, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return gateConn(life, conn, ce), nil
	}
	conn, events, err := zk.Connect(addrs, b.env.TTL, zk.WithDialer(dial), zk.WithLogger(zkLogger{}), zk.WithLogInfo(false))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("zk-lock: client %d: %w", ce.Process, err)
	}
	c := &zkLockClient{conn: conn, auth: b.zk.Auth(), ttl: b.env.TTL, clock: ce.Clock, cancel: cancel, held: map[string]*zk.Lock{}}
	if c.clock == nil {
		c.clock = clientfault.NewClock()
	}
	t := time.NewTimer(zkSessionWait)
	defer t.Stop()
	for {
		select {
		case ev := <-events:
			if ev.State != zk.StateHasSession {
				continue
			}
			go func() {
				for range events { // the library closes it with the conn
				}
			}()
			if err := zookeeper.AddAuth(conn, c.auth); err != nil {
				_ = c.Close()
				return nil, fmt.Errorf("zk-lock: client %d: %w", ce.Process, err)
			}
			return c, nil
		case <-ctx.Done():
			err = ctx.Err()
		case <-t.C:
			err = fmt.Errorf("no session within %v (servers %s)", zkSessionWait, strings.Join(addrs, ", "))
		}
		_ = c.Close()
		return nil, fmt.Errorf("zk-lock: client %d: %w", ce.Process, err)
	}
}

type zkLockClient struct {
	conn   *zk.Conn
	auth   *cluster.Auth
	ttl    time.Duration
	clock  *clientfault.Clock
	cancel context.CancelFunc

	mu   sync.Mutex
	held map[string]*zk.Lock // by token
}

func (c *zkLockClient) Acquire(ctx context.Context, key string) (Grant, error) {
	start := c.clock.Now()
	l := zk.NewLock(c.conn, zkLockRoot+"/"+key, zookeeper.ACL(c.auth, false))
	_, err := zkCall(ctx, func() (struct{}, error) { return struct{}{}, l.Lock() }, func(struct{}) {
		// Granted after the acquire gave up: nobody holds it.
		_ = l.Unlock()
	})
	if err != nil {
		if zkCertain(err) {
			err = Certain(err)
		}
		return Grant{}, fmt.Errorf("zk-lock: acquire %s: %w", key, err)
	}
	token := randomToken()
	c.mu.Lock()
	c.held[token] = l
	c.mu.Unlock()
	return Grant{Lease: leaseLeft(c.clock, c.ttl, start), HasLease: true, Token: token}, nil
}

func (c *zkLockClient) Release(ctx context.Context, key string, g Grant) error {
	c.mu.Lock()
	l := c.held[g.Token]
	delete(c.held, g.Token)
	c.mu.Unlock()
	if l == nil {
		return fmt.Errorf("%w: zk-lock: release %s: no such grant", ErrNotHeld, key)
	}
	_, err := zkCall(ctx, func() (struct{}, error) { return struct{}{}, l.Unlock() }, nil)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("%w: zk-lock: release %s: the lock node is gone (the session ended): %w", ErrNotHeld, key, err)
	case zkCertain(err):
		// Not sent (no connection): the node, if the session lives, stays.
		return Certain(fmt.Errorf("zk-lock: release %s: %w", key, err))
	}
	return fmt.Errorf("zk-lock: release %s: %w", key, err)
}

// Close ends the session: the servers delete every lock node it holds.
func (c *zkLockClient) Close() error {
	c.cancel()
	c.conn.Close()
	return nil
}
