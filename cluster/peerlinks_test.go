package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// zkInitial is a ZooKeeper election initial message from sid at addr.
func zkInitial(version, sid int64, addr string) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(version))
	b = binary.BigEndian.AppendUint64(b, uint64(sid))
	b = binary.BigEndian.AppendUint32(b, uint32(len(addr)))
	return append(b, addr...)
}

// TestRewriteZKInitial: the address of a whole initial message (either
// protocol version) is replaced, what follows is kept; a partial message
// waits for more; a stream of another protocol passes as it is.
func TestRewriteZKInitial(t *testing.T) {
	msg := zkInitial(zkProtocolV1, 2, "127.0.0.1:3888")
	tail := []byte{0, 0, 0, 4, 1, 2, 3, 4}
	for _, tc := range []struct {
		name string
		in   []byte
		done bool
		want []byte
	}{
		{"v1 with what follows", append(append([]byte(nil), msg...), tail...), true, append(zkInitial(zkProtocolV1, 2, "10.0.0.1:41000"), tail...)},
		{"v2", zkInitial(zkProtocolV2, 3, "a:1|b:2"), true, zkInitial(zkProtocolV2, 3, "10.0.0.1:41000")},
		{"version only", msg[:8], false, nil},
		{"address cut short", msg[:len(msg)-1], false, nil},
		{"old protocol (sid first)", binary.BigEndian.AppendUint64(nil, 2), true, binary.BigEndian.AppendUint64(nil, 2)},
		{"bad length", append(append([]byte(nil), msg[:16]...), 0xff, 0xff, 0xff, 0xff), true, append(append([]byte(nil), msg[:16]...), 0xff, 0xff, 0xff, 0xff)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, done := rewriteZKInitial(tc.in, "10.0.0.1:41000")
			if done != tc.done || !bytes.Equal(out, tc.want) {
				t.Errorf("got %v %x, want %v %x", done, out, tc.done, tc.want)
			}
		})
	}
}

// echoServer answers every connection by echoing it; it stops with the test.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// TestLinkHold: bytes sent while a link holds do not arrive; at the heal
// they all arrive, in order, on the same connection (a cut drops them).
func TestLinkHold(t *testing.T) {
	ctx := context.Background()
	c, err := New(Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.EnableLinks()
	s := &addrServer{name: "echo", addr: echoServer(t)}
	for _, tc := range []struct {
		name     string
		hold     bool
		wantBack string // after the heal
	}{
		{"hold keeps the bytes", true, "during"},
		{"cut drops them", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := c.Link("t-"+tc.name, s)
			if err != nil {
				t.Fatal(err)
			}
			conn, err := net.Dial("tcp", l.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			roundTrip := func(msg string) string {
				if _, err := conn.Write([]byte(msg)); err != nil {
					t.Fatal(err)
				}
				b := make([]byte, 64)
				_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
				n, _ := conn.Read(b)
				return string(b[:n])
			}
			if got := roundTrip("before"); got != "before" {
				t.Fatalf("before the fault: %q", got)
			}
			fault := l.Cut
			if tc.hold {
				fault = l.Hold
			}
			h, err := fault(ctx, Both)
			if err != nil {
				t.Fatal(err)
			}
			if got := roundTrip("during"); got != "" {
				t.Fatalf("during the fault %q came back", got)
			}
			if err := l.Heal(ctx, h); err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 64)
			_ = conn.SetReadDeadline(time.Now().Add(time.Second))
			n, _ := conn.Read(b)
			if got := string(b[:n]); got != tc.wantBack {
				t.Errorf("after the heal %q arrived, want %q", got, tc.wantBack)
			}
		})
	}
}

// addrServer is a Server at an address, for link tests.
type addrServer struct{ name, addr string }

func (g *addrServer) Name() string                   { return g.name }
func (g *addrServer) Addr() string                   { return g.addr }
func (g *addrServer) Stop(ctx context.Context) error { return nil }
func (g *addrServer) LogPath() string                { return "" }

// zkModes returns each member's mode ("" while it does not serve).
func zkModes(ctx context.Context, z *ZooKeeper) map[string]string {
	out := map[string]string{}
	for _, m := range z.Members() {
		mode, _ := m.Mode(ctx)
		out[m.Name()] = mode
	}
	return out
}

// TestZooKeeperMemberCut: with links enabled, a 3-member ensemble's
// members dial one another through links of their own (each zoo.cfg names
// the others at link addresses); cutting the leader from both followers
// (both directions of both pairs) makes it stop serving while the two
// elect a new leader between them and take writes; at the heal the old
// leader rejoins as a follower and has the writes. Without links, no
// member has links to cut.
func TestZooKeeperMemberCut(t *testing.T) {
	requireZooKeeper(t)
	ctx := context.Background()
	tmp := t.TempDir()
	plain, err := New(Options{TempDir: t.TempDir(), LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	pz, err := plain.ZooKeeper(ctx, ZooKeeperOptions{Members: 3})
	if err != nil {
		t.Fatal(err)
	}
	if ls := plain.PeerLinks(pz.members[0], pz.members[1]); ls != nil || plain.Peers() != nil {
		t.Errorf("without links enabled: peer links %v, peers %v", ls, plain.Peers())
	}
	_ = plain.Close()

	c, err := New(Options{TempDir: tmp, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.EnableLinks()
	z, err := c.ZooKeeper(ctx, ZooKeeperOptions{Members: 3})
	if err != nil {
		t.Fatal(err)
	}
	ms := z.Members()
	if len(c.Peers()) != 3 {
		t.Fatalf("peers %v", c.Peers())
	}
	for _, m := range ms {
		cfg, err := os.ReadFile(filepath.Join(m.DataDir(), "zoo.cfg"))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range ms {
			ls := c.PeerLinks(m, o)
			if o == m {
				if ls != nil || !strings.Contains(string(cfg), fmt.Sprintf("server.%d=%s:%d:%d\n", o.id, o.host, o.quorumPort, o.electionPort)) {
					t.Errorf("%s: its own line is not its own ports, or it has links to itself", m.Name())
				}
				continue
			}
			if len(ls) != 2 {
				t.Fatalf("%s->%s: %d links", m.Name(), o.Name(), len(ls))
			}
			_, qp, _ := net.SplitHostPort(ls[0].Addr())
			_, ep, _ := net.SplitHostPort(ls[1].Addr())
			if want := fmt.Sprintf("server.%d=127.0.0.1:%s:%s\n", o.id, qp, ep); !strings.Contains(string(cfg), want) {
				t.Errorf("%s's zoo.cfg has no %q:\n%s", m.Name(), want, cfg)
			}
		}
	}

	leader, err := z.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var others []*ZooKeeperMember
	var addrs []string
	for _, m := range ms {
		if m != leader {
			others = append(others, m)
			addrs = append(addrs, m.Addr())
		}
	}
	conn := zkConnect(t, addrs...)
	if _, err := conn.Create("/before", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	var held []*Link
	var handles []string
	for _, o := range others {
		for _, l := range append(c.PeerLinks(leader, o), c.PeerLinks(o, leader)...) {
			h, err := l.Hold(ctx, Both)
			if err != nil {
				t.Fatal(err)
			}
			held, handles = append(held, l), append(handles, h)
		}
	}
	cut := time.Now()
	var newLeader *ZooKeeperMember
	err = waitFor(ctx, 60*time.Second, func() error {
		modes := zkModes(ctx, z)
		for _, o := range others {
			if modes[o.Name()] == "leader" {
				newLeader = o
			}
		}
		if newLeader == nil || modes[leader.Name()] != "" {
			return fmt.Errorf("modes %v", modes)
		}
		for _, o := range others {
			if o != newLeader && modes[o.Name()] != "follower" {
				return fmt.Errorf("modes %v", modes)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("after cutting the leader %s from the others: %v", leader.Name(), err)
	}
	t.Logf("cut the leader %s from the others: %s leads after %v", leader.Name(), newLeader.Name(), time.Since(cut).Round(time.Millisecond))
	if _, err := conn.Create("/during", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Errorf("the majority takes no write: %v", err)
	}
	if _, err := leader.Mode(ctx); err == nil {
		t.Errorf("the cut old leader still serves")
	}

	for i, l := range held {
		if err := l.Heal(ctx, handles[i]); err != nil {
			t.Fatal(err)
		}
	}
	healed := time.Now()
	err = waitFor(ctx, 60*time.Second, func() error {
		if mode, err := leader.Mode(ctx); err != nil || mode != "follower" {
			return fmt.Errorf("old leader %q, %v", mode, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("after the heal: %v", err)
	}
	t.Logf("healed: the old leader %s follows after %v", leader.Name(), time.Since(healed).Round(time.Millisecond))
	only := zkConnect(t, leader.Addr())
	if _, err := only.Sync("/during"); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := only.Exists("/during"); err != nil || !ok {
		t.Errorf("the old leader does not have the write made during the cut: %v %v", ok, err)
	}
}
