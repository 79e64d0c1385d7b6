// Package links carries the bytes between clients and servers, and between
// servers, through in-process proxies (toxiproxy), one per pair, so that a
// fault can cut, delay or hold one pair's traffic alone: a client's link to
// a server, a replica's link to its primary, and the links between the
// members of an ensemble (peer links), which dial patiently and can
// rewrite ZooKeeper's election handshake so that every connection of a
// pair goes through its links.
package links

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// ErrClosed is returned when a link is asked of a closed set.
var ErrClosed = errors.New("links are closed")

// Target is what a link leads to: a server, by its name and address.
type Target interface {
	// Name is the server's name ("redis-0").
	Name() string
	// Addr is its host:port.
	Addr() string
}

// ClientName is how a client process is named on links and in faults.
func ClientName(p int) string { return fmt.Sprintf("p%d", p) }

// Direction says which way a link fault acts.
type Direction string

// The directions of a link.
const (
	// BothWays is client to server and back: requests and replies.
	BothWays Direction = "both"
	// Upstream is client to server: requests.
	Upstream Direction = "upstream"
	// Downstream is server to client: replies (the server acted, the client
	// never heard).
	Downstream Direction = "downstream"
)

// ParseDirection accepts both, upstream (or requests) and downstream (or replies).
func ParseDirection(s string) (Direction, error) {
	switch s {
	case "", "both":
		return BothWays, nil
	case "upstream", "requests":
		return Upstream, nil
	case "downstream", "replies":
		return Downstream, nil
	}
	return "", fmt.Errorf("bad direction %q (both, upstream, downstream)", s)
}

func (d Direction) streams() []string {
	switch d {
	case Upstream:
		return []string{"upstream"}
	case Downstream:
		return []string{"downstream"}
	}
	return []string{"upstream", "downstream"}
}

// Link is the proxy that carries every byte between one client process (or
// one server, for replication and Sentinel traffic) and one server, so a
// fault can cut or slow that pair alone. It runs in-process (toxiproxy).
type Link struct {
	// From names the client ("p0") or server the link serves.
	From string
	// To is the server the link leads to.
	To     Target
	proxy  *toxiproxy.Proxy
	set    *Set
	stop   func() // stops the link: its accept loop is ours (Set.open)
	conns  *connSet
	mu     sync.Mutex
	n      int // toxic names
	faults map[string][]string
}

// Addr is the address the client dials.
func (l *Link) Addr() string { return l.proxy.Listen }

// Cut drops every byte on the link in direction d, silently (no reset):
// a partition. It returns a handle for Heal.
func (l *Link) Cut(ctx context.Context, d Direction) (string, error) {
	return l.add(d, "timeout", map[string]any{"timeout": 0})
}

// Delay holds every byte in direction d for latency ± jitter.
func (l *Link) Delay(ctx context.Context, d Direction, latencyMS, jitterMS int64) (string, error) {
	return l.add(d, "latency", map[string]any{"latency": latencyMS, "jitter": jitterMS})
}

// LoseReply arms the link to lose the next reply of each of its
// connections: the first bytes the server sends are dropped and the
// connection is closed at once, so the server has done what was asked
// but the client never hears it (toxiproxy's limit_data of 0 bytes, on
// the replies). A connection made while it is armed loses its first
// reply too: heal it soon after.
func (l *Link) LoseReply(ctx context.Context) (string, error) {
	return l.add(Downstream, "limit_data", map[string]any{"bytes": 0})
}

func (l *Link) add(d Direction, typ string, attrs map[string]any) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	handle := fmt.Sprintf("f%d", l.n)
	var names []string
	for _, s := range d.streams() {
		name := fmt.Sprintf("%s-%s-%s", handle, typ, s)
		body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`, name, typ, s, jsonAttrs(attrs))
		err := l.bounded(context.Background(), "adding "+typ, func() error {
			_, err := l.proxy.Toxics.AddToxicJson(strings.NewReader(body))
			return err
		})
		if err != nil {
			for _, n := range names {
				_ = l.remove(context.Background(), n)
			}
			return "", fmt.Errorf("link %s->%s: %s: %w", l.From, l.To.Name(), typ, err)
		}
		names = append(names, name)
	}
	if l.faults == nil {
		l.faults = map[string][]string{}
	}
	l.faults[handle] = names
	return handle, nil
}

// Heal removes the fault with this handle. It returns within about
// twice stuckPatience whatever the link's readers do: see bounded.
func (l *Link) Heal(ctx context.Context, handle string) error {
	l.mu.Lock()
	names := l.faults[handle]
	delete(l.faults, handle)
	l.mu.Unlock()
	var err error
	for _, n := range names {
		if e := l.remove(ctx, n); e != nil && err == nil {
			err = fmt.Errorf("link %s->%s: heal: %w", l.From, l.To.Name(), e)
		}
	}
	return err
}

// remove takes the toxic named name off the link, in bounded time.
func (l *Link) remove(ctx context.Context, name string) error {
	return l.bounded(ctx, "removing "+name, func() error { return l.proxy.Toxics.RemoveToxic(ctx, name) })
}

// stuckPatience is how long a change of a link's toxics may take before
// the link's connections are broken so that it ends. Such a change
// interrupts the toxics' goroutines and waits for them; one blocked
// writing to a reader that does not read (a client process stopped by
// SIGSTOP, a peer that stopped reading: a delayed stream's bytes wait in
// the toxic) cannot be interrupted, and toxiproxy would wait forever,
// holding the link's lock (no new connection either). A change that can
// proceed takes microseconds; toxiproxy's own wait for a slow reader, at
// a removal, is 5s per chunk.
const stuckPatience = 3 * time.Second

// ErrStuck is returned when a change of a link's toxics did not end even
// after its connections were broken.
var ErrStuck = errors.New("a change of the link's faults did not end")

// bounded runs change (a change of the link's toxics) and waits for it up
// to stuckPatience, or until ctx ends; then it breaks every connection of
// the link (a write to one is discarded, a read fails: the stuck toxic
// goroutine's write goes through, the toxic sees its interrupt and the
// connection's streams end), says so in the set's Remarks, and waits up
// to stuckPatience again. The link itself keeps working: new connections
// pass as before.
func (l *Link) bounded(ctx context.Context, what string, change func() error) error {
	done := make(chan error, 1)
	go func() { done <- change() }()
	t := time.NewTimer(stuckPatience)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
	case <-ctx.Done():
	}
	n := l.conns.breakAll()
	msg := fmt.Sprintf("link %s->%s: %s did not end within %s (a reader that does not read: a stopped process, a peer that stopped reading): its %d connection(s) were closed so that it could end", l.From, l.To.Name(), what, stuckPatience, n)
	t.Reset(stuckPatience)
	select {
	case err := <-done:
		l.set.remark(msg)
		return err
	case <-t.C:
		l.set.remark(msg + ", and it still did not end")
		return fmt.Errorf("%w: %s", ErrStuck, msg)
	}
}

// healAll removes every fault on the link.
func (l *Link) healAll(ctx context.Context) {
	l.mu.Lock()
	hs := make([]string, 0, len(l.faults))
	for h := range l.faults {
		hs = append(hs, h)
	}
	l.mu.Unlock()
	for _, h := range hs {
		_ = l.Heal(ctx, h)
	}
}

// close stops the link's listener and connections.
func (l *Link) close() { l.stop() }

func jsonAttrs(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(m))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%q:%v", k, m[k]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// Set is one run's links, by name, made on first use.
type Set struct {
	host   string // where the links listen
	mu     sync.Mutex
	server *toxiproxy.ApiServer
	byKey  map[string]*Link
	closed bool
	// remarks are what the harness did to links that a run's results
	// must say (Remarks).
	remarks []string
}

// Remarks are what the set had to do to its links beyond the faults
// asked of it: connections broken because a fault's heal could not
// otherwise end (bounded). A run logs them and notes them in its results.
func (ls *Set) Remarks() []string {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return append([]string(nil), ls.remarks...)
}

func (ls *Set) remark(s string) {
	ls.mu.Lock()
	ls.remarks = append(ls.remarks, s)
	ls.mu.Unlock()
}

var _ = toxics.Register // the toxics package registers "timeout" and "latency"

// NewSet makes an empty set whose links listen on host: an address that
// servers, too, can dial (a replica's link to its primary).
func NewSet(host string) *Set {
	return &Set{
		host:   host,
		server: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop()),
		byKey:  map[string]*Link{},
	}
}

// Get returns the link named key from (a client or server named) from to
// to, making it on first use: a proxy to upstream (an address of to).
func (ls *Set) Get(key, from string, to Target, upstream string) (*Link, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed {
		return nil, ErrClosed
	}
	if l, ok := ls.byKey[key]; ok {
		return l, nil
	}
	l, err := ls.open(key, from, to, upstream, func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", upstream)
	})
	if err != nil {
		return nil, err
	}
	ls.byKey[key] = l
	return l, nil
}

// open makes a link named key from from to to: a listener on the set's
// host whose accept loop is ours, each connection accepted dialing
// upstream with dial (whose ctx ends when the link stops) and carried
// through the link's toxics by toxiproxy. The connections are ours too
// (connSet), so a stuck toxic can be freed (bounded).
func (ls *Set) open(key, from string, to Target, upstream string, dial func(ctx context.Context) (net.Conn, error)) (*Link, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(ls.host, "0"))
	if err != nil {
		return nil, fmt.Errorf("links: %s: %w", key, err)
	}
	p := toxiproxy.NewProxy(ls.server, key, ln.Addr().String(), upstream)
	conns := &connSet{all: map[*trackedConn]bool{}}
	l := &Link{From: from, To: to, proxy: p, set: ls, conns: conns}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	l.stop = func() {
		_ = ln.Close()
		cancel()
		wg.Wait() // no dial left to add a connection
		conns.closeAll()
	}
	wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				up, err := dial(ctx)
				if err != nil {
					_ = client.Close()
					return
				}
				cl, u := conns.track(client), conns.track(up)
				name := client.RemoteAddr().String()
				p.Toxics.StartLink(ls.server, name+"upstream", cl, u, stream.Upstream)
				p.Toxics.StartLink(ls.server, name+"downstream", u, cl, stream.Downstream)
			})
		}
	})
	return l, nil
}

// connSet is a link's open connections (both ends of each).
type connSet struct {
	mu  sync.Mutex
	all map[*trackedConn]bool
}

// track adds c to the set until it is closed.
func (cs *connSet) track(c net.Conn) *trackedConn {
	t := &trackedConn{Conn: c}
	t.onClose = func() {
		cs.mu.Lock()
		delete(cs.all, t)
		cs.mu.Unlock()
	}
	cs.mu.Lock()
	cs.all[t] = true
	cs.mu.Unlock()
	return t
}

func (cs *connSet) list() []*trackedConn {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := make([]*trackedConn, 0, len(cs.all))
	for t := range cs.all {
		out = append(out, t)
	}
	return out
}

// closeAll closes every connection.
func (cs *connSet) closeAll() {
	for _, t := range cs.list() {
		_ = t.Close()
	}
}

// breakAll breaks every connection (trackedConn.breakConn) and returns
// how many (client-side ones: a connection counts once).
func (cs *connSet) breakAll() int {
	all := cs.list()
	for _, t := range all {
		t.breakConn()
	}
	return (len(all) + 1) / 2
}

// trackedConn is a connection that leaves its link's set when closed.
// Once broken, it is closed and every write to it is discarded: a toxic
// stuck writing to it goes on, and its stream ends at the read that now
// fails.
type trackedConn struct {
	net.Conn
	once    sync.Once
	onClose func()
	broken  atomic.Bool
}

// Close closes the connection and forgets it.
func (t *trackedConn) Close() error {
	t.once.Do(t.onClose)
	return t.Conn.Close()
}

// Write writes b, or discards it once the connection is broken (a write
// under way when it breaks fails at the close, and is discarded too).
func (t *trackedConn) Write(b []byte) (int, error) {
	if t.broken.Load() {
		return len(b), nil
	}
	n, err := t.Conn.Write(b)
	if err != nil && t.broken.Load() {
		return len(b), nil
	}
	return n, err
}

// breakConn resets the connection (what it had yet to send is dropped;
// the other end reads a reset) and makes its writes succeed unsent.
func (t *trackedConn) breakConn() {
	t.broken.Store(true)
	if tc, ok := t.Conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = t.Close()
}

// Close stops every proxy: no listener is left.
func (ls *Set) Close() {
	ls.mu.Lock()
	ls.closed = true
	all := ls.byKey
	ls.byKey = map[string]*Link{}
	ls.mu.Unlock()
	// Side by side, and not waited for past a second: a proxy's Stop
	// closes its listener at once, but then waits for its accept loop,
	// which may be dialling a server that does not answer at all (a
	// killed container's address: no refusal, only silence) with no time
	// limit of its own. That dial ends by itself within seconds.
	var wg sync.WaitGroup
	for _, l := range all {
		wg.Go(func() {
			l.healAll(context.Background())
			l.close()
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
}

// Drop stops links made for servers that did not start.
func (ls *Set) Drop(drop []*Link) {
	ls.mu.Lock()
	for k, l := range ls.byKey {
		for _, d := range drop {
			if l == d {
				delete(ls.byKey, k)
			}
		}
	}
	ls.mu.Unlock()
	for _, l := range drop {
		l.healAll(context.Background())
		l.close()
	}
}
