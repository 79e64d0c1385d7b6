package cluster

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster/links"
	"github.com/locktorture/locktorture/internal/testenv"
)

func TestLinks(t *testing.T) {
	testenv.Require(t, "redis-server")
	ctx := context.Background()
	c, err := New(Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.StartRedis(ctx, RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ClientAddr(0, r); got != r.Addr() {
		t.Fatalf("without links a client dials the server: %s, want %s", got, r.Addr())
	}
	c.EnableLinks()
	a0, a1 := c.ClientAddr(0, r), c.ClientAddr(1, r)
	if a0 == r.Addr() || a0 == a1 || c.ClientAddr(0, r) != a0 {
		t.Fatalf("want one link per (client, server): p0 %s, p1 %s, server %s", a0, a1, r.Addr())
	}
	if err := pingRedis(ctx, Endpoint{Addr: a0}); err != nil {
		t.Fatalf("ping through the link: %v", err)
	}
	l, _ := c.Link(links.ClientName(0), r)

	// A cut link is silent: the connection opens, nothing comes back.
	h, err := l.Cut(ctx, links.BothWays)
	if err != nil {
		t.Fatal(err)
	}
	if err := pingRedis(ctx, Endpoint{Addr: a0}); err == nil {
		t.Error("ping got through a cut link")
	}
	if err := pingRedis(ctx, Endpoint{Addr: a1}); err != nil {
		t.Errorf("the other client's link should be whole: %v", err)
	}
	if err := l.Heal(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := pingRedis(ctx, Endpoint{Addr: a0}); err != nil {
		t.Errorf("ping after heal: %v", err)
	}

	// Replies held 300ms.
	h, err = l.Delay(ctx, links.Downstream, 300, 0)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := pingDeadline(ctx, a0, 5*time.Second); err != nil {
		t.Fatalf("ping through a slow link: %v", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("the reply came back in %s, before the 300ms delay", d)
	}
	_ = l.Heal(ctx, h)

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if conn, err := net.DialTimeout("tcp", a0, time.Second); err == nil {
		conn.Close()
		t.Errorf("link %s still listens after Close", a0)
	}
}

// pingDeadline is pingRedis with a longer read deadline.
func pingDeadline(ctx context.Context, addr string, d time.Duration) error {
	conn, err := net.DialTimeout("tcp", addr, d)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(d))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 7)
	_, err = conn.Read(buf)
	return err
}
