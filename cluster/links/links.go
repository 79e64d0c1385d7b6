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
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
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
	stop   func() // stops a link whose accept loop is ours (patientLink)
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
		if _, err := l.proxy.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
			for _, n := range names {
				_ = l.proxy.Toxics.RemoveToxic(context.Background(), n)
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

// Heal removes the fault with this handle.
func (l *Link) Heal(ctx context.Context, handle string) error {
	l.mu.Lock()
	names := l.faults[handle]
	delete(l.faults, handle)
	l.mu.Unlock()
	var err error
	for _, n := range names {
		if e := l.proxy.Toxics.RemoveToxic(ctx, n); e != nil && err == nil {
			err = fmt.Errorf("link %s->%s: heal: %w", l.From, l.To.Name(), e)
		}
	}
	return err
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
func (l *Link) close() {
	if l.stop != nil {
		l.stop()
		return
	}
	l.proxy.Stop()
}

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
	p := toxiproxy.NewProxy(ls.server, key, net.JoinHostPort(ls.host, "0"), upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("links: %s: %w", key, err)
	}
	l := &Link{From: from, To: to, proxy: p}
	ls.byKey[key] = l
	return l, nil
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
