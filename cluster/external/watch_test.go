package external

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster"
)

// TestWatchSkipsControlled: the watch of servers someone else
// runs dials only those no fault can act on. A server a servers file
// names by DSN with control: docker (PgBouncer, PostgreSQL; MariaDB
// alike) is one a kill fault stops on purpose: it must not be reported as
// gone, while an uncontrolled one that stops answering is.
func TestWatchSkipsControlled(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String() // nothing listens there once closed
	l.Close()
	pgbouncer := "postgres://u:p@" + closed + "/db"
	postgres := "postgres://u:p@" + closed + "/db?sslmode=disable"
	c := cluster.NewExternal(cluster.ServerSet{
		Servers:  map[string][]string{"pgbouncer": {pgbouncer}, "postgres": {postgres}, "redis": {closed}},
		Controls: map[string]string{pgbouncer: "locktorture-pgbouncer", postgres: "locktorture-postgres"},
	})
	defer c.Close()
	// The controlled ones first: each tick dials them before the Redis.
	// PgBouncer's start hands out PostgreSQL first, then the PgBouncer.
	if err := c.StartKind(context.Background(), "pgbouncer", cluster.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.StartKind(context.Background(), "redis", cluster.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	stop := Watch(c, 5*time.Millisecond)
	for len(c.Died()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	died := c.Died()
	if len(died) != 1 || !strings.HasPrefix(died[0], "redis-0 ") {
		t.Fatalf("reported as gone: %q, want only the uncontrolled redis-0", died)
	}
}
