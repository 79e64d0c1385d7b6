package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// Links between the members of an ensemble (server to server), beside the
// clients' links: a member dials each other member at the address of a
// link of that pair, so a fault can cut or slow one pair of members alone.
// Only ZooKeeper members can be given per-member views of one another;
// etcd members cannot (see PeerLinks).

func init() {
	toxics.Register(holdToxicType, new(holdToxic))
	toxics.Register(zkElectionToxicType, new(zkElectionToxic))
}

// The toxic types this package adds to toxiproxy's.
const (
	holdToxicType       = "locktorture-hold"
	zkElectionToxicType = "locktorture-zk-election"
)

// holdToxic passes nothing until it is removed, then everything it held,
// in order: what a partition does to a TCP connection (the kernel keeps
// retransmitting; the bytes arrive once the network heals, unless a
// timeout of the program's own closed the connection meanwhile). The
// writer's buffers fill and its writes block, as they would.
type holdToxic struct{}

// Pipe reads nothing until it is interrupted (removed, or another toxic
// added after it); toxiproxy then moves what waits on to the next stage.
func (holdToxic) Pipe(stub *toxics.ToxicStub) { <-stub.Interrupt }

// Hold stops every byte on the link in direction d until Heal, then lets
// them all through in order: a partition between two servers whose TCP
// connections outlive it (Cut, in contrast, drops the bytes, which
// breaks a stream's framing at the heal). It returns a handle for Heal.
func (l *Link) Hold(ctx context.Context, d Direction) (string, error) {
	return l.add(d, holdToxicType, map[string]any{})
}

// ZooKeeper's election connections (QuorumCnxManager) start with an
// initial message: protocol version (int64), the dialer's id (int64), the
// length (int32) and text of the dialer's election address. A member that
// is dialed by a member with a smaller id drops the connection and dials
// back the address in that message — not the address its own zoo.cfg
// gives — so the pair's one election connection would bypass the pair's
// link. zkElectionToxic, on the upstream of the election link i→j, writes
// the address of the link j→i there instead: every election connection
// of the pair then goes through one of its two links.
const (
	zkProtocolV1 = -65536
	zkProtocolV2 = -65535
	// zkMaxInitialAddr bounds the address text we rewrite (ZooKeeper's
	// own bound is its maxBuffer, 512 KB by default).
	zkMaxInitialAddr = 1 << 16
)

// zkElectionToxic rewrites the election address in the first message of
// a connection, and passes everything else through.
type zkElectionToxic struct {
	// Addr is the address to give (host:port).
	Addr string `json:"addr"`
}

// zkElectionState is one connection's: the start of the stream, kept
// until the initial message is whole.
type zkElectionState struct {
	buf  []byte
	done bool
}

// NewState makes one connection's state.
func (*zkElectionToxic) NewState() any { return &zkElectionState{} }

// Pipe rewrites the initial message and passes the rest.
func (t *zkElectionToxic) Pipe(stub *toxics.ToxicStub) {
	st := stub.State.(*zkElectionState)
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				rest := st.buf
				st.buf, st.done = nil, true
				if len(rest) > 0 {
					stub.Output <- &stream.StreamChunk{Data: rest, Timestamp: time.Now()}
				}
				stub.Close()
				return
			}
			if st.done {
				stub.Output <- c
				continue
			}
			st.buf = append(st.buf, c.Data...)
			out, done := rewriteZKInitial(st.buf, t.Addr)
			if done {
				st.buf, st.done = nil, true
			}
			if done {
				stub.Output <- &stream.StreamChunk{Data: out, Timestamp: c.Timestamp}
			}
		}
	}
}

// rewriteZKInitial returns b with the election address of its initial
// message replaced by addr, once b holds the whole message (done false:
// wait for more bytes). A stream that does not start with a message of a
// protocol it knows is returned as it is.
func rewriteZKInitial(b []byte, addr string) (out []byte, done bool) {
	if len(b) < 8 {
		return nil, false
	}
	if v := int64(binary.BigEndian.Uint64(b)); v != zkProtocolV1 && v != zkProtocolV2 {
		return b, true
	}
	if len(b) < 20 {
		return nil, false
	}
	n := int(int32(binary.BigEndian.Uint32(b[16:20])))
	if n <= 0 || n > zkMaxInitialAddr {
		return b, true
	}
	if len(b) < 20+n {
		return nil, false
	}
	out = make([]byte, 0, len(b)-n+len(addr))
	out = append(out, b[:16]...)
	out = binary.BigEndian.AppendUint32(out, uint32(len(addr)))
	out = append(out, addr...)
	return append(out, b[20+n:]...), true
}

// peerLink returns the link that carries member from's traffic to to's
// port named port (upstream is that port's address), made on first use
// where servers can dial it; nil when links are not enabled.
func (c *Cluster) peerLink(from, to Server, port, upstream string) (*Link, error) {
	c.mu.Lock()
	ls := c.links
	c.mu.Unlock()
	if ls == nil {
		return nil, nil
	}
	return c.patientLink(ls, from.Name()+"->"+to.Name()+"/"+port, from.Name(), to, upstream)
}

// peerDialPatience is how long a member link keeps dialing a member that
// refuses: ZooKeeper's follower retries a refused connection to its new
// leader (5 tries, 100ms apart) while the leader opens its quorum port. A
// link accepts first and dials after, so a refusal would reach the
// follower as a connection closed during its handshake, which it does not
// retry (it starts a new election; the leader waits out initLimit).
const peerDialPatience = time.Second

// patientLink is Cluster.link with an accept loop of our own (toxiproxy's
// faults act on it as on any link) that dials upstream again, for up to
// peerDialPatience, while upstream refuses, before it closes the
// accepted connection.
func (c *Cluster) patientLink(ls *links, key, from string, s Server, upstream string) (*Link, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed {
		return nil, ErrClosed
	}
	if l, ok := ls.byKey[key]; ok {
		return l, nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(c.provider().HarnessHost(), "0"))
	if err != nil {
		return nil, fmt.Errorf("cluster: link %s: %w", key, err)
	}
	p := toxiproxy.NewProxy(ls.server, key, ln.Addr().String(), upstream)
	l := &Link{From: from, To: s, proxy: p}
	var (
		mu    sync.Mutex
		conns = map[*trackedConn]bool{}
		done  = make(chan struct{})
		wg    sync.WaitGroup
	)
	track := func(c net.Conn) *trackedConn {
		t := &trackedConn{Conn: c}
		t.onClose = func() {
			mu.Lock()
			delete(conns, t)
			mu.Unlock()
		}
		mu.Lock()
		conns[t] = true
		mu.Unlock()
		return t
	}
	l.stop = func() {
		_ = ln.Close()
		close(done)
		wg.Wait() // no dial left to add a connection
		mu.Lock()
		all := make([]*trackedConn, 0, len(conns))
		for t := range conns {
			all = append(all, t)
		}
		mu.Unlock()
		for _, t := range all {
			_ = t.Close()
		}
	}
	wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				up, err := dialPatiently(done, upstream)
				if err != nil {
					_ = client.Close()
					return
				}
				cl, u := track(client), track(up)
				name := client.RemoteAddr().String()
				p.Toxics.StartLink(ls.server, name+"upstream", cl, u, stream.Upstream)
				p.Toxics.StartLink(ls.server, name+"downstream", u, cl, stream.Downstream)
			})
		}
	})
	ls.byKey[key] = l
	return l, nil
}

// dialPatiently dials addr, again every 50ms while it is refused, for up
// to peerDialPatience or until done closes.
func dialPatiently(done <-chan struct{}, addr string) (net.Conn, error) {
	end := time.Now().Add(peerDialPatience)
	for {
		d := net.Dialer{Timeout: max(time.Until(end), 10*time.Millisecond)}
		c, err := d.Dial("tcp", addr)
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(end) {
			return nil, err
		}
		select {
		case <-done:
			return nil, err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// trackedConn is a connection that leaves its link's set when closed.
type trackedConn struct {
	net.Conn
	once    sync.Once
	onClose func()
}

// Close closes the connection and forgets it.
func (t *trackedConn) Close() error {
	t.once.Do(t.onClose)
	return t.Conn.Close()
}

// dropLinks stops links made for servers that did not start.
func (c *Cluster) dropLinks(ls []*Link) {
	c.mu.Lock()
	all := c.links
	c.mu.Unlock()
	if all == nil {
		return
	}
	all.mu.Lock()
	for k, l := range all.byKey {
		for _, d := range ls {
			if l == d {
				delete(all.byKey, k)
			}
		}
	}
	all.mu.Unlock()
	for _, l := range ls {
		l.HealAll(context.Background())
		l.close()
	}
}

// PeerLinks returns the links that carry server from's traffic to server
// to, both members of one ensemble whose members dial one another through
// links: a ZooKeeper ensemble of more than one member started by this
// cluster with links enabled (its quorum and election links of the pair
// in that direction). Cutting both directions of a pair cuts everything
// between the two. Nil otherwise: etcd members cannot be given per-member
// views of one another (a member's id is a hash of its peer URLs, which
// every member must agree on, and peers dial the URLs the cluster's
// membership records).
func (c *Cluster) PeerLinks(from, to Server) []*Link {
	c.zk.mu.Lock()
	z := c.zk.z
	c.zk.mu.Unlock()
	if z == nil {
		return nil
	}
	return z.peers[from.Name()+"->"+to.Name()]
}

// Peers returns the servers whose traffic to one another goes through
// links (see PeerLinks), in start order; none when there are none.
func (c *Cluster) Peers() []Server {
	c.zk.mu.Lock()
	z := c.zk.z
	c.zk.mu.Unlock()
	if z == nil || len(z.peers) == 0 {
		return nil
	}
	return z.Servers()
}

// zookeeperPeerLinks makes the links between the members of z (before
// they start: each member's zoo.cfg names the others at its links' address)
// and sets each member's view of the others; nothing without links or with
// one member. On an error, the links made are stopped.
func (c *Cluster) zookeeperPeerLinks(z *ZooKeeper) error {
	if len(z.members) < 2 || !c.LinksEnabled() {
		return nil
	}
	z.peers = map[string][]*Link{}
	var made []*Link
	fail := func(err error) error {
		c.dropLinks(made)
		z.peers = nil
		for _, m := range z.members {
			m.via = nil
		}
		return err
	}
	election := map[string]*Link{}
	for _, m := range z.members {
		m.via = map[int]string{}
		for _, o := range z.members {
			if o == m {
				continue
			}
			q, err := c.peerLink(m, o, "quorum", o.QuorumAddr())
			if err != nil {
				return fail(err)
			}
			made = append(made, q)
			e, err := c.peerLink(m, o, "election", o.ElectionAddr())
			if err != nil {
				return fail(err)
			}
			made = append(made, e)
			qh, qp, err := net.SplitHostPort(q.Addr())
			if err != nil {
				return fail(err)
			}
			_, ep, err := net.SplitHostPort(e.Addr())
			if err != nil {
				return fail(err)
			}
			m.via[o.id] = fmt.Sprintf("%s:%s:%s", qh, qp, ep)
			z.peers[m.name+"->"+o.name] = []*Link{q, e}
			election[m.name+"->"+o.name] = e
		}
	}
	// Each election link i->j tells j to dial i back at the link j->i.
	for key, e := range election {
		from, to, _ := strings.Cut(key, "->")
		back := election[to+"->"+from]
		body := fmt.Sprintf(`{"name":"zk-election","type":%q,"stream":"upstream","toxicity":1,"attributes":{"addr":%q}}`, zkElectionToxicType, back.Addr())
		if _, err := e.proxy.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
			return fail(fmt.Errorf("cluster: link %s: %w", key, err))
		}
	}
	return nil
}

// PeerLeader returns the member that leads the ensemble whose members
// dial one another through links (see Peers), by asking each its role.
func (c *Cluster) PeerLeader(ctx context.Context) (Server, error) {
	c.zk.mu.Lock()
	z := c.zk.z
	c.zk.mu.Unlock()
	if z == nil || len(z.peers) == 0 {
		return nil, errors.New("cluster: no ensemble whose members talk through links")
	}
	return z.Leader(ctx)
}
