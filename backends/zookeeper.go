package backends

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/zookeeper"
)

// zookeeper is ZooKeeper's lock recipe (what Curator's InterProcessMutex
// does) over github.com/go-zookeeper/zk: a client creates an ephemeral
// sequential znode /locktorture/<key>/_c_<guid>-lock-NNNNNNNNNN (Curator's
// protected create: when a create's reply is lost with the connection, the
// node it may have made is found by its guid and deleted before the next
// acquire, so a node nobody knows of never blocks the key while the
// session lives on) and holds the lock when
// its node has the lowest sequence number under the key. Acquire tries
// once, as the harness's Client contract asks: when a lower node exists,
// the recipe would watch its predecessor and wait; we delete our node
// instead and report ErrBusy, and the workload tries again after its
// think time (the recipe's wait, done by polling).
//
// Fence: the lock znode's czxid, the zxid of the transaction that created
// it. zxids grow across the whole ensemble, and a node is granted only when
// no node created before it under the key is left, so grants of a key
// carry growing fences.
//
// Lease: the session timeout the server negotiated, as this client read it
// from the server's connect reply. The lock lives as long as the session:
// the library pings every third of the timeout, and the servers delete the
// session's ephemeral nodes — the lock — when they hear nothing for a whole
// timeout. Grant.Lease is that timeout less the time the acquire took.
//
// Disconnects, as Curator advises: SUSPENDED (the library lost its
// connection: nothing heard for two thirds of the timeout, or a reset)
// means stop work. The client closes Grant.Lost of every grant made on
// that connection at once, and the workload abandons its critical section
// (it releases; a release that cannot reach a server leaves the node to be
// deleted on the next acquire, or with the session). A grant never
// outlives its connection, even when the session survives a reconnect.
//
// Pauses: the library pings from goroutines of its own, so a pause that
// stopped only our goroutines would keep the session alive. In-process,
// each client's connection is wrapped: every read and write waits at the
// client's pause gate, so a paused client sends nothing (no ping) and acts
// on nothing it receives until it wakes, as a stopped process would; the
// servers expire its session after the timeout. On waking, the library
// goes on zkWakeLag after the client's own next step, as a woken JVM's
// application thread runs before ZooKeeper's event thread tells it of the
// lost connection. In a process of its own
// (ClientEnv.WholeProcess) SIGSTOP stops everything and the connection is
// the library's own.
func init() {
	Register(Info{
		Name:        "zookeeper",
		Description: "the ZooKeeper lock recipe (ephemeral sequential znodes, the lowest holds) over github.com/go-zookeeper/zk; fence = the lock znode's czxid",
		Servers:     "1 or 3 zookeeper (Debian's zookeeper 3.8; zookeeper: {members: 3})",
		Kinds:       []string{"zookeeper"},
		Fencing:     true,
		Lease:       true,
		Renews:      true,
		Options:     func() Options { return &zkOptions{} },
	}, newZooKeeper)
}

// zkOptions are the zookeeper backend's backend_options.
type zkOptions struct {
	// SessionTimeout is the session timeout each client asks for (the
	// lock's lease); zero asks for the scenario's ttl. The library drops
	// its connection when nothing arrives for two thirds of it, so a
	// client whose replies are held longer than that never works again
	// (its reconnects keep its session, and its lock node, alive): a
	// scenario that holds replies longer gives its zookeeper rows a
	// longer session.
	SessionTimeout time.Duration `yaml:"session_timeout"`
}

// Validate refuses a negative session timeout.
func (o *zkOptions) Validate(Env) error {
	if o.SessionTimeout < 0 {
		return fmt.Errorf("session_timeout %s: must be above 0 (or left out: the scenario's ttl)", o.SessionTimeout)
	}
	return nil
}

// sessionTimeout is the session timeout the clients ask for.
func (b *zkBackend) sessionTimeout() time.Duration {
	if o := envOptions(b.env, &zkOptions{}); o.SessionTimeout > 0 {
		return o.SessionTimeout
	}
	return b.env.TTL
}

// zooKeeperLockRoot is the znode under which the zookeeper backend keeps
// its locks: key k's lock nodes are children of zooKeeperLockRoot+"/"+k.
const zooKeeperLockRoot = "/locktorture"

type zkBackend struct {
	env Env
	zk  *zookeeper.ZooKeeper
}

func newZooKeeper(ctx context.Context, env Env) (Backend, error) {
	z, err := zookeeper.Start(ctx, env.Cluster, cluster.OptionsOf[zookeeper.Options](env.Servers, zookeeper.Kind))
	if err != nil {
		return nil, fmt.Errorf("backends: %w", err)
	}
	return &zkBackend{env: env, zk: z}, nil
}

func (b *zkBackend) Close() error { return nil }

// zkLogger drops the library's log lines (reconnects are routine here).
type zkLogger struct{}

func (zkLogger) Printf(string, ...any) {}

// zkSessionWait bounds how long Client waits for the first session.
const zkSessionWait = 10 * time.Second

func (b *zkBackend) Client(ctx context.Context, ce ClientEnv) (Client, error) {
	var addrs []string
	for _, m := range b.zk.Members() {
		addrs = append(addrs, b.env.Cluster.ClientAddr(ce.Process, m))
	}
	clock := ce.Clock
	if clock == nil {
		clock = clientfault.NewClock()
	}
	gate := ce.Gate
	if gate == nil || ce.WholeProcess {
		gate = clientfault.NewGate() // never closed: SIGSTOP does the pausing
	}
	cctx, cancel := context.WithCancel(context.Background())
	c := &zkClient{clock: clock, ctx: cctx, cancel: cancel, session: make(chan struct{}),
		lost: closedChan(), known: map[string]bool{}, unsure: map[string]bool{}, auth: b.zk.Auth()}
	c.timeoutMS.Store(b.sessionTimeout().Milliseconds())
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		conn, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return &zkWire{Conn: conn, gate: gate, ctx: cctx, c: c}, nil
	}
	conn, _, err := zk.Connect(addrs, b.sessionTimeout(), zk.WithDialer(dial), zk.WithEventCallback(c.event),
		zk.WithLogger(zkLogger{}), zk.WithLogInfo(false))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("zookeeper client: %w", err)
	}
	c.conn = conn
	t := time.NewTimer(zkSessionWait)
	defer t.Stop()
	select {
	case <-c.session:
		// go-zookeeper sends the credentials again on every reconnect.
		if err := zookeeper.AddAuth(conn, c.auth); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("zookeeper client %d: %w", ce.Process, err)
		}
		return c, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-t.C:
		err = fmt.Errorf("no session within %v (servers %s)", zkSessionWait, strings.Join(addrs, ", "))
	}
	_ = c.Close()
	return nil, fmt.Errorf("zookeeper client %d: %w", ce.Process, err)
}

func closedChan() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

type zkClient struct {
	conn   *zk.Conn
	auth   *cluster.Auth // the servers' digest user (nil: none)
	clock  *clientfault.Clock
	ctx    context.Context // ends with Close: the wire stops waiting at the gate
	cancel context.CancelFunc
	// timeoutMS is the session timeout the server granted, in ms (the TTL
	// asked for until the first connect reply).
	timeoutMS atomic.Int64

	mu          sync.Mutex
	lost        chan struct{} // closed when the current connection is lost
	session     chan struct{} // closed at the first session
	sessionOnce sync.Once
	known       map[string]bool // lock parents known to exist
	orphans     []string        // our lock nodes still to delete
	// unsure holds the name prefixes of our creates whose outcome is not
	// known: false while the request is in flight, true once it ended
	// without a reply (the node may exist, held by our session).
	unsure map[string]bool
}

// event hears the library's session events (on its goroutines: it must
// not block). A lost connection or session is Curator's SUSPENDED or LOST:
// every grant made on that connection is lost.
func (c *zkClient) event(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch ev.State {
	case zk.StateHasSession:
		select {
		case <-c.lost:
			c.lost = make(chan struct{})
		default:
		}
		c.sessionOnce.Do(func() { close(c.session) })
	case zk.StateDisconnected, zk.StateExpired, zk.StateConnecting:
		select {
		case <-c.lost:
		default:
			close(c.lost)
		}
	}
}

// connection returns the channel that closes when the current connection
// is lost (already closed while there is none).
func (c *zkClient) connection() chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lost
}

func (c *zkClient) sessionTimeout() time.Duration {
	return time.Duration(c.timeoutMS.Load()) * time.Millisecond
}

// call runs f, which blocks until the server answers or the connection
// is lost (the library takes no context), and gives up when ctx ends;
// abandoned, if it still succeeds, runs on its result later.
func zkCall[T any](ctx context.Context, f func() (T, error), abandoned func(T)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		if abandoned != nil {
			go func() {
				if r := <-ch; r.err == nil {
					abandoned(r.v)
				}
			}()
		}
		var zero T
		return zero, ctx.Err()
	}
}

// zkCertain reports whether a failed request certainly did not take effect.
func zkCertain(err error) bool {
	switch {
	case errors.Is(err, zk.ErrNoServer), errors.Is(err, zk.ErrClosing), errors.Is(err, zk.ErrSessionExpired):
		// Never sent, or refused as a whole (an expired session's request
		// is not applied).
		return true
	}
	return false
}

// parent makes sure /locktorture/<key> exists (persistent nodes, made
// once per client and key).
func (c *zkClient) parent(ctx context.Context, key string) (string, error) {
	p := zooKeeperLockRoot + "/" + key
	c.mu.Lock()
	ok := c.known[p]
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	for _, n := range []string{zooKeeperLockRoot, p} {
		acl := zookeeper.ACL(c.auth, n == zooKeeperLockRoot)
		_, err := zkCall(ctx, func() (string, error) { return c.conn.Create(n, nil, 0, acl) }, nil)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return "", err
		}
	}
	c.mu.Lock()
	c.known[p] = true
	c.mu.Unlock()
	return p, nil
}

// orphan remembers a lock node of ours that must go (Curator's guaranteed
// delete): it is deleted before the next acquire, or with the session.
func (c *zkClient) orphan(path string) {
	c.mu.Lock()
	c.orphans = append(c.orphans, path)
	c.mu.Unlock()
}

// create makes our lock node under parent, named _c_<guid>-lock-N with a
// guid of its own. go-zookeeper's CreateProtectedEphemeralSequential looks
// for its node once after a lost connection and, when that look fails too,
// forgets it: the node, held by a session that reconnects, then blocks the
// key until the run ends. Here a create whose reply never came is
// remembered in c.unsure and looked up by findUnsure until it is known.
// A create that succeeds after ctx ended is orphaned.
func (c *zkClient) create(ctx context.Context, parent string) (string, error) {
	var guid [16]byte
	_, _ = rand.Read(guid[:])
	prefix := parent + "/_c_" + hex.EncodeToString(guid[:]) + "-"
	c.mu.Lock()
	c.unsure[prefix] = false
	c.mu.Unlock()
	type result struct {
		path string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		p, err := c.conn.Create(prefix+"lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zookeeper.ACL(c.auth, false))
		c.mu.Lock()
		if err == nil || zkCertain(err) {
			delete(c.unsure, prefix)
		} else {
			c.unsure[prefix] = true
		}
		c.mu.Unlock()
		ch <- result{p, err}
	}()
	select {
	case r := <-ch:
		return r.path, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.err == nil {
				c.orphan(r.path)
			}
		}()
		return "", ctx.Err()
	}
}

// findUnsure looks for the nodes of creates that ended without a reply
// (after a sync, so the server it asks has seen every write the leader
// has) and orphans those it finds; a prefix looked up is forgotten.
func (c *zkClient) findUnsure(ctx context.Context) {
	c.mu.Lock()
	var todo []string
	for prefix, ended := range c.unsure {
		if ended {
			todo = append(todo, prefix)
		}
	}
	c.mu.Unlock()
	for _, prefix := range todo {
		i := strings.LastIndexByte(prefix, '/')
		parent, name := prefix[:i], prefix[i+1:]
		children, err := zkCall(ctx, func() ([]string, error) {
			if _, err := c.conn.Sync(parent); err != nil {
				return nil, err
			}
			ch, _, err := c.conn.Children(parent)
			return ch, err
		}, nil)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return
		}
		for _, ch := range children {
			if strings.HasPrefix(ch, name) {
				c.orphan(parent + "/" + ch)
			}
		}
		c.mu.Lock()
		delete(c.unsure, prefix)
		c.mu.Unlock()
	}
}

// sweep deletes the orphaned lock nodes it can, after looking for the
// nodes of creates whose outcome is unknown.
func (c *zkClient) sweep(ctx context.Context) {
	c.findUnsure(ctx)
	c.mu.Lock()
	todo := c.orphans
	c.orphans = nil
	c.mu.Unlock()
	for i, p := range todo {
		err := c.delete(ctx, p)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			c.mu.Lock()
			c.orphans = append(c.orphans, todo[i:]...)
			c.mu.Unlock()
			return
		}
	}
}

func (c *zkClient) delete(ctx context.Context, path string) error {
	_, err := zkCall(ctx, func() (struct{}, error) { return struct{}{}, c.conn.Delete(path, -1) }, nil)
	return err
}

// zkSeq is a lock node's sequence number (its last ten digits), -1 when
// the name has none.
func zkSeq(name string) int64 {
	if len(name) < 10 {
		return -1
	}
	n, err := strconv.ParseInt(name[len(name)-10:], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func (c *zkClient) Acquire(ctx context.Context, key string) (Grant, error) {
	start := c.clock.Now()
	lost := c.connection()
	select {
	case <-lost:
		// Disconnected: no request would be sent now.
		return Grant{}, Certain(fmt.Errorf("acquire %s: %w", key, zk.ErrNoServer))
	default:
	}
	c.sweep(ctx)
	parent, err := c.parent(ctx, key)
	if err != nil {
		// Only persistent parents were asked for: no lock was taken.
		return Grant{}, Certain(fmt.Errorf("acquire %s: %w", key, err))
	}
	path, err := c.create(ctx, parent)
	if err != nil {
		if zkCertain(err) {
			err = Certain(err)
		}
		return Grant{}, fmt.Errorf("acquire %s: %w", key, err)
	}
	ours := path[strings.LastIndexByte(path, '/')+1:]
	children, err := zkCall(ctx, func() ([]string, error) {
		ch, _, err := c.conn.Children(parent)
		return ch, err
	}, nil)
	if err != nil {
		c.orphan(path)
		return Grant{}, fmt.Errorf("acquire %s: %w", key, err)
	}
	sort.Slice(children, func(i, j int) bool { return zkSeq(children[i]) < zkSeq(children[j]) })
	if len(children) == 0 || children[0] != ours {
		// A lower node holds the lock (or waits for it). The recipe would
		// watch the one just below ours; trying once, we leave.
		if err := c.delete(ctx, path); err != nil && !errors.Is(err, zk.ErrNoNode) {
			c.orphan(path)
		}
		return Grant{}, ErrBusy
	}
	st, err := zkCall(ctx, func() (*zk.Stat, error) {
		ok, st, err := c.conn.Exists(path)
		if err == nil && !ok {
			err = zk.ErrNoNode
		}
		return st, err
	}, nil)
	if err != nil {
		c.orphan(path)
		if errors.Is(err, zk.ErrNoNode) {
			// Our session expired between the two requests: never held.
			return Grant{}, Certain(fmt.Errorf("acquire %s: lock node %s vanished: %w", key, path, err))
		}
		return Grant{}, fmt.Errorf("acquire %s: %w", key, err)
	}
	fence := st.Czxid
	return Grant{
		Fence:    &fence,
		Lease:    leaseLeft(c.clock, c.sessionTimeout(), start),
		HasLease: true,
		Token:    path,
		Lost:     lost,
	}, nil
}

func (c *zkClient) Release(ctx context.Context, key string, g Grant) error {
	if g.Token == "" || !strings.HasPrefix(g.Token, zooKeeperLockRoot+"/"+key+"/") {
		return Certain(fmt.Errorf("release %s: not a zookeeper grant", key))
	}
	err := c.delete(ctx, g.Token)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("release %s: lock node %s is gone (the session expired): %w", key, g.Token, ErrNotHeld)
	}
	// Maybe deleted, maybe not: make sure it goes.
	c.orphan(g.Token)
	return fmt.Errorf("release %s: %w", key, err)
}

// Close ends the session: the servers delete every lock node it holds.
func (c *zkClient) Close() error {
	c.cancel()
	if c.conn != nil {
		c.conn.Close()
	}
	return nil
}

// zkWire is a client's connection to a server, as the library sees it.
// Every read and write first waits at the client's pause gate (a paused
// client neither pings nor acts on what arrives; what arrives waits in the
// socket), and the first reply on it — the connect response — tells the
// session timeout the server granted.
type zkWire struct {
	net.Conn
	gate *clientfault.Gate
	ctx  context.Context
	c    *zkClient
	head []byte // the connect response's first bytes, until parsed
	done bool
}

func (w *zkWire) Read(b []byte) (int, error) {
	if err := w.hold(); err != nil {
		return 0, err
	}
	n, err := w.Conn.Read(b)
	// Bytes (or a timeout) that arrived during a pause are acted on after it.
	if herr := w.hold(); herr != nil {
		return 0, herr
	}
	if !w.done && n > 0 {
		// length(4) protocolVersion(4) timeOut(4) ...
		w.head = append(w.head, b[:n]...)
		if len(w.head) >= 12 {
			if ms := int32(binary.BigEndian.Uint32(w.head[8:12])); ms > 0 {
				w.c.timeoutMS.Store(int64(ms))
			}
			w.done, w.head = true, nil
		}
	}
	return n, err
}

// zkWakeLag is how long after a pause the library goes on with what it
// read (or failed to read) meanwhile. A woken client's application
// thread, already runnable, takes its next step first; ZooKeeper's Java
// client hands a connection event from its I/O thread to its event thread,
// and Curator to its listener thread, before the application hears of it.
// Without the lag, which of the two goroutines the Go scheduler runs first
// after the gate opens would decide the verdict of zk-pause at random.
const zkWakeLag = 10 * time.Millisecond

// hold waits at the gate; after a pause it waits zkWakeLag more.
func (w *zkWire) hold() error {
	if !w.gate.Paused() {
		return nil
	}
	if err := w.gate.Wait(w.ctx); err != nil {
		return net.ErrClosed
	}
	t := time.NewTimer(zkWakeLag)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-w.ctx.Done():
		return net.ErrClosed
	}
}

func (w *zkWire) Write(b []byte) (int, error) {
	if err := w.gate.Wait(w.ctx); err != nil {
		return 0, net.ErrClosed
	}
	return w.Conn.Write(b)
}
