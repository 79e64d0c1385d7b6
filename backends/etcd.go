package backends

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/etcd"
	"github.com/locktorture/locktorture/history"
)

// etcd is the lock etcd's own client library offers: a
// go.etcd.io/etcd/client/v3/concurrency Mutex per key, over a session whose
// lease TTL is the scenario's TTL. Acquire is one TryLock: it puts a key
// <prefix>/<lease> bound to the client's lease and owns the lock when that
// key has the lowest create revision under the prefix; a busy lock is
// ErrBusy (the waiting key is deleted again).
//
// Guarantees: while a client's lease lives, nobody else owns its key (raft
// makes the grant linearizable, so a partition or a server pause cannot
// hand the lock out twice). What it does not guarantee: when the client
// stops refreshing its lease — a stop-the-world pause, a partition longer
// than the TTL — etcd deletes its key at expiry and grants the lock to the
// next client, while the first one still believes it holds it (Kleppmann's
// case, as with any lease).
//
// Fence: the lock key's create revision, which etcd's docs recommend as the
// fencing token (it grows with every grant of every key). Grant.Conn is an
// *EtcdConn naming the lock key, so the etcd resource can guard a write
// with an etcd transaction that succeeds only while that key still exists
// with that create revision.
//
// Leases: etcd lease TTLs are whole seconds, so the TTL is rounded up
// (1.2s becomes 2s; etcd itself raises a TTL below its minimum, 1s with the
// harness's settings, and the TTL it reports is the one used). The session
// lease is created by this code (Grant), handed to concurrency.NewSession
// with WithLease, and the session's own keepalive is then stopped (Orphan):
// client/v3 3.5 keeps every session lease alive from a goroutine of its own,
// even one passed in with WithLease, and a stop-the-world pause must stop
// that too. The lease is kept alive instead by our goroutine, which waits
// at the client's pause gate before each KeepAliveOnce (every TTL/3) and
// records each one as an extend op while the client holds a key. When a
// keepalive finds the lease gone (or none succeeded for a whole TTL), the
// grants made under it get Lost closed and the next Acquire makes a fresh
// lease. Grant.Lease is the TTL less the time since the lease was last
// refreshed (the send time of the last successful grant or keepalive, by the
// client's clock), which also covers the time the acquire took.
//
// Release deletes the lock key in a transaction guarded by Mutex.IsOwner
// (Mutex.Unlock's delete, made conditional): a release after the lease ran
// out reports ErrNotHeld instead of silently deleting nothing.
func init() {
	Register(Info{
		Name:        "etcd",
		Description: "go.etcd.io/etcd/client/v3/concurrency Mutex over a session lease; fence = the lock key's create revision",
		Servers:     "1 etcd (etcd-server 3.4)",
		Kinds:       []string{"etcd"},
		Fencing:     true,
		Lease:       true,
		Renews:      true,
	}, newEtcd)
}

// etcdLockPrefix is the etcd key prefix of the etcd backend's locks: the
// Mutex of key k lives under etcdLockPrefix+k.
const etcdLockPrefix = "locktorture/lock/"

// EtcdConn is the Conn of an etcd grant: the client's own etcd connection
// and the lock key (<prefix>/<lease id>) whose create revision is the
// grant's fence. A resource that stores in etcd guards a write with
// Compare(CreateRevision(LockKey), "=", fence), as etcd's docs recommend.
type EtcdConn struct {
	// Client is the lock client's etcd client (its own connections).
	Client *clientv3.Client
	// LockKey is the key the grant's Mutex owns.
	LockKey string
	// hold numbers the client's holds of the key (see etcdClient.holds).
	hold int64
}

type etcdBackend struct {
	env  Env
	etcd *etcd.Etcd
	ttl  int64 // lease TTL in whole seconds
}

func newEtcd(ctx context.Context, env Env) (Backend, error) {
	e, err := etcd.Start(ctx, env.Cluster, cluster.OptionsOf[etcd.Options](env.Servers, etcd.Kind))
	if err != nil {
		return nil, fmt.Errorf("backends: %w", err)
	}
	return &etcdBackend{env: env, etcd: e, ttl: etcdLeaseSeconds(env.TTL)}, nil
}

// etcdLeaseSeconds is the etcd lease TTL for a lock TTL: whole seconds,
// rounded up, at least 1.
func etcdLeaseSeconds(ttl time.Duration) int64 {
	s := int64((ttl + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}

// newEtcdClient dials every member through the client's own links.
func newEtcdClient(c *cluster.Cluster, e *etcd.Etcd, process int, timeout time.Duration) (*clientv3.Client, error) {
	var eps []string
	for _, m := range e.Members() {
		eps = append(eps, c.ClientAddr(process, m))
	}
	// No AutoSyncInterval: the client must keep to its own links, not
	// the members' advertised addresses.
	cfg, err := e.ClientConfig(eps, timeout)
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	return cli, nil
}

func (b *etcdBackend) Client(ctx context.Context, ce ClientEnv) (Client, error) {
	cli, err := newEtcdClient(b.env.Cluster, b.etcd, ce.Process, b.env.OpTimeout)
	if err != nil {
		return nil, err
	}
	clock := ce.Clock
	if clock == nil {
		clock = clientfault.NewClock()
	}
	gate := ce.Gate
	if gate == nil {
		gate = clientfault.NewGate()
	}
	cctx, cancel := context.WithCancel(context.Background())
	return &etcdClient{cli: cli, ttl: b.ttl, opTimeout: b.env.OpTimeout, clock: clock, gate: gate, hist: ce.History,
		ctx: cctx, cancel: cancel, whole: ce.WholeProcess}, nil
}

func (b *etcdBackend) Close() error { return nil }

type etcdClient struct {
	cli       *clientv3.Client
	ttl       int64
	opTimeout time.Duration
	clock     *clientfault.Clock
	gate      *clientfault.Gate
	hist      *history.Proc
	ctx       context.Context // ends the keepalive goroutines
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	// whole is set in a process of its own (ClientEnv.WholeProcess): the
	// session keeps its lease alive itself, as users write it, and a pause
	// (SIGSTOP) stops that keepalive with everything else.
	whole bool

	mu     sync.Mutex
	sess   *etcdSession
	held   string // the key held now, for extend records
	closed bool
	// holds counts, per key, the client's grants of it: a grant's
	// release deletes the lock key only while the grant is the client's
	// latest of that key (see Release).
	holds map[string]int64
}

// etcdSession is one lease and the concurrency.Session over it.
type etcdSession struct {
	s       *concurrency.Session
	lease   clientv3.LeaseID
	ttl     time.Duration // as granted
	lost    chan struct{}
	once    sync.Once
	mu      sync.Mutex
	fresh   time.Time // client clock: when the last successful refresh was sent
	mutexes map[string]*concurrency.Mutex
}

func (s *etcdSession) markLost() { s.once.Do(func() { close(s.lost) }) }

func (s *etcdSession) isLost() bool {
	select {
	case <-s.lost:
		return true
	default:
		return false
	}
}

func (s *etcdSession) refreshed() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fresh
}

func (s *etcdSession) refresh(sent time.Time, ttlSeconds int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sent.After(s.fresh) {
		s.fresh = sent
	}
	s.ttl = time.Duration(ttlSeconds) * time.Second
}

func (s *etcdSession) leaseTTL() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ttl
}

func (s *etcdSession) mutex(key string) *concurrency.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.mutexes[key]
	if !ok {
		m = concurrency.NewMutex(s.s, etcdLockPrefix+key)
		s.mutexes[key] = m
	}
	return m
}

// session returns the live session, making a new lease when there is none
// or the last one was lost.
func (c *etcdClient) session(ctx context.Context) (*etcdSession, error) {
	c.mu.Lock()
	s, closed := c.sess, c.closed
	c.mu.Unlock()
	if closed {
		return nil, errors.New("etcd client closed")
	}
	if s != nil && !s.isLost() {
		return s, nil
	}
	if c.whole {
		return c.librarySession(ctx)
	}
	sent := c.clock.Now()
	gr, err := c.cli.Grant(ctx, c.ttl)
	if err != nil {
		return nil, fmt.Errorf("grant lease: %w", err)
	}
	cs, err := concurrency.NewSession(c.cli, concurrency.WithLease(gr.ID))
	if err != nil {
		c.revoke(gr.ID)
		return nil, fmt.Errorf("session: %w", err)
	}
	// Stop the library's own keepalive: ours runs under the pause gate.
	cs.Orphan()
	s = &etcdSession{s: cs, lease: gr.ID, ttl: time.Duration(gr.TTL) * time.Second, lost: make(chan struct{}),
		fresh: sent, mutexes: map[string]*concurrency.Mutex{}}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.revoke(gr.ID)
		return nil, errors.New("etcd client closed")
	}
	c.sess = s
	c.wg.Add(1)
	c.mu.Unlock()
	go c.keepalive(s)
	return s, nil
}

// librarySession makes a session as users write it:
// concurrency.NewSession keeps its lease alive in the library's own
// goroutine, and the session ends (lost) when that keepalive stops.
func (c *etcdClient) librarySession(ctx context.Context) (*etcdSession, error) {
	sent := c.clock.Now()
	cs, err := concurrency.NewSession(c.cli, concurrency.WithTTL(int(c.ttl)), concurrency.WithContext(c.ctx))
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	s := &etcdSession{s: cs, lease: cs.Lease(), ttl: time.Duration(c.ttl) * time.Second, lost: make(chan struct{}),
		fresh: sent, mutexes: map[string]*concurrency.Mutex{}}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.revoke(s.lease)
		return nil, errors.New("etcd client closed")
	}
	c.sess = s
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		select {
		case <-cs.Done():
			s.markLost()
		case <-c.ctx.Done():
		}
	}()
	return s, nil
}

// revoke drops a lease we no longer use, best effort.
func (c *etcdClient) revoke(id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), c.opTimeout)
	defer cancel()
	_, _ = c.cli.Revoke(ctx, id)
}

func (c *etcdClient) heldKey() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
}

func (c *etcdClient) setHeld(key string) {
	c.mu.Lock()
	c.held = key
	c.mu.Unlock()
}

// keepalive refreshes s's lease every TTL/3, each time waiting at the pause
// gate first, until the lease is lost or the client closes.
func (c *etcdClient) keepalive(s *etcdSession) {
	defer c.wg.Done()
	for {
		if c.gate.Sleep(c.ctx, s.leaseTTL()/3) != nil || s.isLost() {
			return
		}
		key := c.heldKey()
		var ext *history.BackgroundOp // the extend op, in the background (see history.Proc)
		if key != "" && c.hist != nil {
			var err error
			if ext, err = c.hist.InvokeBackground(c.ctx, history.Op{F: history.Extend, Key: key}); err != nil {
				return // closing
			}
		}
		sent := c.clock.Now()
		ctx, cancel := context.WithTimeout(c.ctx, c.opTimeout)
		resp, err := c.cli.KeepAliveOnce(ctx, s.lease)
		cancel()
		done := history.Op{F: history.Extend, Key: key}
		switch {
		case err == nil:
			s.refresh(sent, resp.TTL)
			done.Type = history.OK
			done.LeaseMS = history.Int64(leaseLeft(c.clock, s.leaseTTL(), sent).Milliseconds())
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			// The lease ran out: etcd deleted every key of the session.
			done.Type, done.Error = history.Fail, fmt.Sprintf("lease %x expired: %v", int64(s.lease), err)
			s.markLost()
		default:
			done.Type, done.Error = history.Info, fmt.Sprintf("keepalive lease %x: %v", int64(s.lease), err)
			if c.clock.Since(s.refreshed()) >= s.leaseTTL() {
				// No refresh for a whole TTL: by our own reckoning the
				// lease is gone.
				s.markLost()
			}
		}
		if ext != nil {
			// A completion after the client went on is not recorded (the
			// history has the extend as info); the keepalive goes on.
			if _, err := ext.Complete(done); err != nil && !errors.Is(err, history.ErrSuperseded) {
				return
			}
		}
		if s.isLost() {
			return
		}
	}
}

func (c *etcdClient) Acquire(ctx context.Context, key string) (Grant, error) {
	start := c.clock.Now()
	s, err := c.session(ctx)
	if err != nil {
		// No lock was asked for: the acquire certainly did not happen.
		return Grant{}, Certain(fmt.Errorf("acquire %s: %w", key, err))
	}
	m := s.mutex(key)
	err = m.TryLock(ctx)
	switch {
	case err == nil:
	case errors.Is(err, concurrency.ErrLocked):
		return Grant{}, ErrBusy
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		// The lease expired before the keepalive noticed; the transaction
		// was refused as a whole.
		s.markLost()
		return Grant{}, Certain(fmt.Errorf("acquire %s: %w", key, err))
	default:
		return Grant{}, fmt.Errorf("acquire %s: %w", key, err)
	}
	// IsOwner compares the key's create revision with the one the Mutex
	// recorded when it took the lock: that revision is the fence.
	owner := pb.Compare(m.IsOwner())
	fence := owner.GetCreateRevision()
	base := s.refreshed()
	if start.Before(base) || c.whole {
		// (The library's keepalive refreshes unseen: count from the start.)
		base = start
	}
	c.setHeld(key)
	return Grant{
		Fence:    &fence,
		Lease:    leaseLeft(c.clock, s.leaseTTL(), base),
		HasLease: true,
		Token:    m.Key(),
		Lost:     s.lost,
		Conn:     &EtcdConn{Client: c.cli, LockKey: m.Key(), hold: c.newHold(key)},
	}, nil
}

func (c *etcdClient) Release(ctx context.Context, key string, g Grant) error {
	c.setHeld("")
	conn, ok := g.Conn.(*EtcdConn)
	if !ok || g.Fence == nil {
		return Certain(fmt.Errorf("release %s: not an etcd grant", key))
	}
	if !c.latestHold(key, conn.hold) {
		// A retry of an earlier hold's release, whose outcome was unknown,
		// after the client acquired the key again. If that release did
		// not happen, the Mutex took the lock key as it found it, at the
		// same revision, for the newer hold: deleting it now would end
		// that hold under its holder, and another client would be granted
		// the lock beside it. If it did, the key is gone or newer. Either
		// way the earlier hold is over: nothing to delete.
		return Certain(fmt.Errorf("release %s: a later hold of the key (%s) is the client's now: %w", key, conn.LockKey, ErrNotHeld))
	}
	resp, err := c.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(conn.LockKey), "=", *g.Fence)).
		Then(clientv3.OpDelete(conn.LockKey)).
		Commit()
	if err != nil {
		return fmt.Errorf("release %s: %w", key, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("release %s: lock key %s is gone (its lease expired): %w", key, conn.LockKey, ErrNotHeld)
	}
	return nil
}

// newHold numbers a new grant of key: the client's latest of it.
func (c *etcdClient) newHold(key string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holds == nil {
		c.holds = map[string]int64{}
	}
	c.holds[key]++
	return c.holds[key]
}

// latestHold reports whether hold is the client's latest grant of key.
func (c *etcdClient) latestHold(key string, hold int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.holds[key] == hold
}

func (c *etcdClient) Close() error {
	c.mu.Lock()
	c.closed = true
	s := c.sess
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	if s != nil && !s.isLost() {
		c.revoke(s.lease) // deletes whatever the client still holds
	}
	return c.cli.Close()
}
