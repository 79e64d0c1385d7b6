package links

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// hoseServer answers a connection whose first byte is 'F' with bytes
// without end (until a write fails), counted in *sent; any other first
// byte, by echoing. It stops with the test.
func hoseServer(t *testing.T, sent *atomic.Int64) string {
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
			go func() {
				defer c.Close()
				first := make([]byte, 1)
				if _, err := io.ReadFull(c, first); err != nil {
					return
				}
				if first[0] != 'F' {
					_, _ = c.Write(first)
					_, _ = io.Copy(c, c)
					return
				}
				buf := make([]byte, 32<<10)
				for {
					n, err := c.Write(buf)
					sent.Add(int64(n))
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// hoseStuck is how much the server must have sent through a link whose
// client reads nothing before the link's writer to the client is surely
// stuck: more than the kernel's buffers on the way can hold (a few MB
// each at most on loopback), so the rest waits in the latency toxic.
const hoseStuck = 24 << 20

// TestLinkHealStuckReader: a latency toxic whose reader does not read (a
// client frozen by SIGSTOP, a peer that stopped reading) blocks in its
// write, where toxiproxy's RemoveToxic cannot interrupt it: Heal (and a
// fault added on top) must still return, by breaking the link's
// connections, say so in the set's remarks, and leave the link working
// for new connections.
func TestLinkHealStuckReader(t *testing.T) {
	for _, tc := range []struct {
		name      string
		direction Direction
	}{
		{"replies held, client reads nothing", Downstream},
		{"both ways held, client reads nothing", BothWays},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ls := NewSet("127.0.0.1")
			defer ls.Close()
			var sent atomic.Int64
			s := &addrServer{name: "hose", addr: hoseServer(t, &sent)}
			l, err := ls.Get("t-stuck->"+s.Name(), "t-stuck", s, s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			h, err := l.Delay(ctx, tc.direction, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			frozen, err := net.Dial("tcp", l.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer frozen.Close()
			_ = frozen.(*net.TCPConn).SetReadBuffer(4096)
			if _, err := frozen.Write([]byte("F")); err != nil {
				t.Fatal(err)
			}
			for sent.Load() < hoseStuck { // the writer to frozen is stuck
				time.Sleep(10 * time.Millisecond)
			}
			if err := l.Heal(ctx, h); err != nil {
				t.Fatalf("heal: %v", err)
			}
			if rs := ls.Remarks(); len(rs) != 1 {
				t.Errorf("remarks %q, want one about the broken connections", rs)
			}
			// The stuck connection is gone, and the link serves a new one.
			_ = frozen.SetReadDeadline(time.Now().Add(time.Minute))
			if _, err := io.Copy(io.Discard, frozen); !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("the stuck connection: %v, want it reset", err)
			}
			conn, err := net.Dial("tcp", l.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.Write([]byte("Eafter")); err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 6)
			_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
			if _, err := io.ReadFull(conn, b); err != nil || string(b) != "Eafter" {
				t.Errorf("after the heal: %q, %v", b, err)
			}
		})
	}
}
