package links

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
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
	ls := NewSet("127.0.0.1")
	defer ls.Close()
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
			l, err := ls.Get("t-"+tc.name+"->"+s.Name(), "t-"+tc.name, s, s.Addr())
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
			h, err := fault(ctx, BothWays)
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

// addrServer is a Target at an address, for link tests.
type addrServer struct{ name, addr string }

func (g *addrServer) Name() string { return g.name }
func (g *addrServer) Addr() string { return g.addr }

// TestLoseOneReply: while armed, the first reply is dropped and its
// connection closed (the server did get the request); once one is lost,
// another connection's replies pass, though the link is still armed.
func TestLoseOneReply(t *testing.T) {
	ctx := context.Background()
	ls := NewSet("127.0.0.1")
	defer ls.Close()
	s := &addrServer{name: "echo", addr: echoServer(t)}
	l, err := ls.Get("t-once->"+s.Name(), "t-once", s, s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	dial := func() net.Conn {
		conn, err := net.Dial("tcp", l.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		return conn
	}
	roundTrip := func(conn net.Conn, msg string) (string, error) {
		if _, err := conn.Write([]byte(msg)); err != nil {
			return "", err
		}
		b := make([]byte, 64)
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		n, err := conn.Read(b)
		return string(b[:n]), err
	}
	first := dial()
	if got, err := roundTrip(first, "before"); got != "before" {
		t.Fatalf("before the fault: %q, %v", got, err)
	}
	if _, err := l.LoseOneReply(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		conn    net.Conn
		want    string
		wantErr bool
	}{
		{"the first reply is lost, its connection closed", first, "", true},
		{"a new connection's replies pass", dial(), "again", false},
	} {
		got, err := roundTrip(tc.conn, "again")
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("%s: got %q, %v", tc.name, got, err)
		}
	}
}
