// Command rueidislock-failover: rueidislock (github.com/redis/rueidis) keeps a
// holder's context live while its Redis is down and a promoted replica grants
// the lock to another client. README: "The returned ctx will be canceled
// automatically and immediately once the KeyMajority is not held anymore, for
// example: Redis are down." Give it two redis-servers of your own: the replica
// follows the primary through a proxy here, cut before A locks (it never gets
// A's keys); the primary dies (SHUTDOWN NOSAVE NOW) and the replica is
// promoted (REPLICAOF NO ONE), as Sentinel would. A knows only the primary
// (a holder cut off from the new one); B locks on the promoted replica.
//
//	go run . -primary 127.0.0.1:6379 -replica 127.0.0.1:6380   # exit 1: reproduced
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

var link = make(chan net.Conn, 1) // the replication proxy's connection to the primary

func main() {
	primary := flag.String("primary", "127.0.0.1:6379", "the primary (it is shut down)")
	replica := flag.String("replica", "127.0.0.1:6380", "the replica-to-be (it is promoted)")
	flag.Parse()
	bg, name := context.Background(), fmt.Sprintf("failover-%d", time.Now().UnixNano())
	do := func(addr string, args ...string) string {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
		check(err)
		s, _ := c.Do(bg, c.B().Arbitrary(args[0]).Args(args[1:]...).Build()).ToString()
		return s
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	go proxy(ln, *primary)
	do(*replica, "REPLICAOF", "127.0.0.1", fmt.Sprint(ln.Addr().(*net.TCPAddr).Port))
	for !strings.Contains(do(*replica, "INFO", "replication"), "master_link_status:up") {
		time.Sleep(50 * time.Millisecond)
	}
	check((<-link).SetReadDeadline(time.Now())) // the cut: nothing more reaches the replica
	locker := func(addr string) rueidislock.Locker {
		l, err := rueidislock.NewLocker(rueidislock.LockerOption{TryNextAfter: time.Second,
			ClientOption: rueidis.ClientOption{InitAddress: []string{addr}}, KeyValidity: 5 * time.Second})
		check(err)
		return l
	}
	ctxA, _, err := locker(*primary).TryWithContext(bg, name)
	check(err)
	start := time.Now()
	since := func() float64 { return time.Since(start).Seconds() }
	fmt.Println("0.000s A granted on the primary (KeyValidity 5s); replication to the replica is cut")
	do(*primary, "SHUTDOWN", "NOSAVE", "NOW")
	fmt.Printf("%.3fs the primary is shut down (A's Redis is down); the replica promoted: %s\n", since(), do(*replica, "REPLICAOF", "NO", "ONE"))
	b, bAt := locker(*replica), 0.0
	for ; bAt == 0 && ctxA.Err() == nil && since() < 10; time.Sleep(10 * time.Millisecond) {
		if _, _, err := b.TryWithContext(bg, name); err == nil && ctxA.Err() == nil {
			bAt = since()
			fmt.Printf("%.3fs B granted on the promoted replica; A's context is live\n", bAt)
		}
	}
	<-ctxA.Done() // by the keys' deadline at the latest
	fmt.Printf("%.3fs A's context: %v\n", since(), ctxA.Err())
	if bAt > 0 {
		fmt.Printf("REPRODUCED: two holders for %.3fs, with A's Redis down all along\n", since()-bAt)
		os.Exit(1)
	}
	fmt.Println("not reproduced: A's context ended before B was granted")
}

// proxy forwards one connection from l to target, its upstream sent on link.
func proxy(l net.Listener, target string) {
	c, _ := l.Accept()
	s, err := net.Dial("tcp", target)
	check(err)
	link <- s
	go io.Copy(s, c)
	io.Copy(c, s) // until the cut: a read deadline on s
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
}
