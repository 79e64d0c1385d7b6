package links

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"context"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// Links between the members of an ensemble (server to server), beside the
// clients' links: a member dials each other member at the address of a
// link of that pair, so a fault can cut or slow one pair of members alone.

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

// RedirectElection makes l, the election link of a ZooKeeper member to
// another, tell the other member to dial back at addr (the link of the
// pair the other way) instead of the address the member announces.
func (l *Link) RedirectElection(addr string) error {
	body := fmt.Sprintf(`{"name":"zk-election","type":%q,"stream":"upstream","toxicity":1,"attributes":{"addr":%q}}`, zkElectionToxicType, addr)
	if _, err := l.proxy.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
		return fmt.Errorf("links: %s->%s: %w", l.From, l.To.Name(), err)
	}
	return nil
}

// peerDialPatience is how long a member link keeps dialing a member that
// refuses: ZooKeeper's follower retries a refused connection to its new
// leader (5 tries, 100ms apart) while the leader opens its quorum port. A
// link accepts first and dials after, so a refusal would reach the
// follower as a connection closed during its handshake, which it does not
// retry (it starts a new election; the leader waits out initLimit).
const peerDialPatience = time.Second

// Patient is Get for a link between two servers (a peer link): its
// accept loop is our own (toxiproxy's faults act on it as on any link) and
// dials upstream again, for up to peerDialPatience, while upstream
// refuses, before it closes the accepted connection.
func (ls *Set) Patient(key, from string, s Target, upstream string) (*Link, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed {
		return nil, ErrClosed
	}
	if l, ok := ls.byKey[key]; ok {
		return l, nil
	}
	l, err := ls.open(key, from, s, upstream, func(ctx context.Context) (net.Conn, error) {
		return dialPatiently(ctx.Done(), upstream)
	})
	if err != nil {
		return nil, err
	}
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
