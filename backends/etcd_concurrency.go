package backends

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"google.golang.org/grpc"

	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/etcd"
)

// etcd-concurrency is etcd's own lock as its client library ships it and
// its examples use it: one concurrency.NewSession per client process (a
// lease of the scenario's TTL, rounded up to whole seconds, that the
// library keeps alive from its own goroutine, a keepalive every third of
// the TTL), kept across acquisitions, and a concurrency.NewMutex over it
// per acquisition: TryLock to take it (the workload retries), Unlock to
// give it back. A new session is made only when the library reports the
// old one done (Session.Done: its keepalive ended, the lease expired or
// was revoked), as a service whose session died would. (The etcd backend
// is our own lease loop over etcd's Mutex: it keeps the lease alive from
// the harness's loop, under the pause gate, and guards its release.)
//
// Its claim (the concurrency package's doc for Session): "Session
// represents a lease kept alive for the lifetime of a client. Fault-
// tolerant applications may use sessions to reason about liveness", and
// for Done: "Done returns a channel that closes when the lease is orphaned,
// expires, or is otherwise no longer being refreshed" — Grant.Lost is
// Session.Done. The Mutex's key is bound to the session's lease: etcd
// deletes it when the lease expires, and the next waiter owns the lock.
//
// Release is Mutex.Unlock, which deletes the lock key by name whether or
// not it is still ours (a lease that expired took it already: the delete
// succeeds and says nothing). Lease: the TTL less the time the acquire
// took, by the client's clock (the library refreshes it unseen: no extend
// op). No fence.
func init() {
	Register(Info{
		Name:         "etcd-concurrency",
		Description:  "go.etcd.io/etcd/client/v3/concurrency Session (the library's own keepalive, one session kept) and Mutex",
		Servers:      "1 etcd (etcd-server 3.4)",
		Kinds:        []string{"etcd"},
		Lease:        true,
		Library:      &Library{Name: "go.etcd.io/etcd/client/v3/concurrency", Module: "go.etcd.io/etcd/client/v3", Language: "Go"},
		RenewsItself: true,
	}, newEtcdConcurrency)
}

// etcdConcurrencyPrefix is the key prefix of etcd-concurrency's locks: the
// Mutex of key k lives under etcdConcurrencyPrefix+k.
const etcdConcurrencyPrefix = "locktorture/concurrency/"

type etcdConcurrencyBackend struct {
	env  Env
	etcd *etcd.Etcd
}

func newEtcdConcurrency(ctx context.Context, env Env) (Backend, error) {
	e, err := etcd.Start(ctx, env.Cluster, cluster.OptionsOf[etcd.Options](env.Servers, etcd.Kind))
	if err != nil {
		return nil, fmt.Errorf("backends: %w", err)
	}
	return &etcdConcurrencyBackend{env: env, etcd: e}, nil
}

func (b *etcdConcurrencyBackend) Close() error { return nil }

func (b *etcdConcurrencyBackend) Client(ctx context.Context, ce ClientEnv) (Client, error) {
	var eps []string
	for _, m := range b.etcd.Members() {
		eps = append(eps, b.env.Cluster.ClientAddr(ce.Process, m))
	}
	cfg, err := b.etcd.ClientConfig(eps, b.env.OpTimeout)
	if err != nil {
		return nil, fmt.Errorf("etcd-concurrency: %w", err)
	}
	life, cancel := context.WithCancel(context.Background())
	d := net.Dialer{}
	cfg.DialOptions = append(cfg.DialOptions, grpc.WithContextDialer(func(dctx context.Context, addr string) (net.Conn, error) {
		conn, err := d.DialContext(dctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return gateConn(life, conn, ce), nil
	}))
	cli, err := clientv3.New(cfg)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("etcd-concurrency: client %d: %w", ce.Process, err)
	}
	clock := ce.Clock
	if clock == nil {
		clock = clientfault.NewClock()
	}
	c := &etcdConcurrencyClient{cli: cli, ttl: int(etcdLeaseSeconds(b.env.TTL)), clock: clock, life: life, cancel: cancel}
	// The session is made now, as a service makes it at start; a failure
	// here is tried again on the first acquire.
	sctx, scancel := context.WithTimeout(ctx, b.env.OpTimeout)
	_, _ = c.session(sctx)
	scancel()
	return c, nil
}

type etcdConcurrencyClient struct {
	cli    *clientv3.Client
	ttl    int // seconds
	clock  *clientfault.Clock
	life   context.Context
	cancel context.CancelFunc

	mu   sync.Mutex
	sess *concurrency.Session
}

// session returns the client's session, making one when there is none or
// the library says the last is done.
func (c *etcdConcurrencyClient) session(ctx context.Context) (*concurrency.Session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess != nil {
		select {
		case <-c.sess.Done():
		default:
			return c.sess, nil
		}
	}
	// NewSession grants the lease with the session's own context (the
	// client's life): ctx only bounds how long this acquire waits for it.
	type result struct {
		s   *concurrency.Session
		err error
	}
	ch := make(chan result, 1)
	go func() {
		s, err := concurrency.NewSession(c.cli, concurrency.WithTTL(c.ttl), concurrency.WithContext(c.life))
		ch <- result{s, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, r.err
		}
		c.sess = r.s
		return r.s, nil
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.err == nil {
				_ = r.s.Close() // revokes the lease nobody uses
			}
		}()
		return nil, ctx.Err()
	}
}

func (c *etcdConcurrencyClient) Acquire(ctx context.Context, key string) (Grant, error) {
	start := c.clock.Now()
	s, err := c.session(ctx)
	if err != nil {
		// A lease grant may have happened, a lock was not asked for.
		return Grant{}, Certain(fmt.Errorf("etcd-concurrency: acquire %s: session: %w", key, err))
	}
	m := concurrency.NewMutex(s, etcdConcurrencyPrefix+key)
	err = m.TryLock(ctx)
	switch {
	case err == nil:
	case errors.Is(err, concurrency.ErrLocked):
		return Grant{}, fmt.Errorf("%w: etcd-concurrency: acquire %s: %w", ErrBusy, key, err)
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		// The lease expired: the transaction was refused whole.
		return Grant{}, Certain(fmt.Errorf("etcd-concurrency: acquire %s: %w", key, err))
	default:
		return Grant{}, fmt.Errorf("etcd-concurrency: acquire %s: %w", key, err)
	}
	return Grant{Lease: leaseLeft(c.clock, time.Duration(c.ttl)*time.Second, start), HasLease: true,
		Token: m.Key(), Lost: s.Done(), Conn: m}, nil
}

func (c *etcdConcurrencyClient) Release(ctx context.Context, key string, g Grant) error {
	m, ok := g.Conn.(*concurrency.Mutex)
	if !ok {
		return Certain(fmt.Errorf("etcd-concurrency: release %s: not an etcd-concurrency grant", key))
	}
	if err := m.Unlock(ctx); err != nil {
		return fmt.Errorf("etcd-concurrency: release %s: %w", key, err)
	}
	return nil
}

// Close ends the session (revoking its lease: etcd deletes what it
// holds) and the client.
func (c *etcdConcurrencyClient) Close() error {
	c.mu.Lock()
	s := c.sess
	c.mu.Unlock()
	if s != nil {
		_ = s.Close()
	}
	c.cancel()
	return c.cli.Close()
}
