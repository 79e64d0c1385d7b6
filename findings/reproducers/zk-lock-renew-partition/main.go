// Command zk-lock-renew-partition: go-zookeeper's zk.Lock ("Lock is a mutual
// exclusion lock") gives its holder no way to learn that its session expired
// and its lock node is gone, while ZooKeeper grants the lock to another client.
// Client A reaches ZooKeeper through a TCP proxy here, cut (nothing forwarded,
// bytes held) once A's Lock returns: a partition past the session timeout;
// B connects directly and calls Lock; then A's link is restored. A's Conn
// events are printed: they come from zk.Connect's channel, not from zk.Lock.
//
//	go run . -zk 127.0.0.1:2181   # exit 1: reproduced, 0: not
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

var cut atomic.Bool // set: the proxy forwards nothing

func main() {
	addr := flag.String("zk", "127.0.0.1:2181", "ZooKeeper address")
	flag.Parse()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	go proxy(ln, *addr)
	connA, events, err := zk.Connect([]string{ln.Addr().String()}, 4*time.Second, zk.WithLogInfo(false))
	check(err)
	connB, _, err := zk.Connect([]string{*addr}, 4*time.Second, zk.WithLogInfo(false))
	check(err)
	path, acl := fmt.Sprintf("/zk-lock-renew-partition-%d", time.Now().UnixNano()), zk.WorldACL(zk.PermAll)
	a, b := zk.NewLock(connA, path, acl), zk.NewLock(connB, path, acl)
	check(a.Lock())
	for len(events) > 0 { // the events of A's connecting
		<-events
	}
	start := time.Now()
	since := func() float64 { return time.Since(start).Seconds() }
	cut.Store(true)
	time.AfterFunc(time.Minute, func() { fmt.Println("not reproduced: B not granted in 1m"); os.Exit(0) })
	fmt.Println("0.000s A's Lock returned; A's link to ZooKeeper is cut (session timeout asked: 4s)")
	go func() {
		for ev := range events {
			fmt.Printf("%.3fs A's Conn event (not from zk.Lock): %v %v\n", since(), ev.Type, ev.State)
		}
	}()
	err = b.Lock() // waits until A's lock node is gone
	cut.Store(false)
	fmt.Printf("%.3fs B's Lock returned: %v; A has not called Unlock. A's link restored\n", since(), err)
	time.Sleep(2 * time.Second)
	fmt.Printf("%.3fs A's Unlock: %v\n", since(), a.Unlock())
	if err == nil {
		fmt.Println("REPRODUCED: B was granted while A held the lock, and zk.Lock told A nothing")
		os.Exit(1)
	}
	fmt.Println("not reproduced")
}

// proxy forwards each connection l accepts to target.
func proxy(l net.Listener, target string) {
	for {
		c, _ := l.Accept()
		s, err := net.Dial("tcp", target)
		check(err)
		go pipe(s, c)
		go pipe(c, s)
	}
}

// pipe copies src to dst; while cut, what it read waits.
func pipe(dst io.WriteCloser, src io.Reader) {
	defer dst.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		for cut.Load() {
			time.Sleep(5 * time.Millisecond)
		}
		if _, werr := dst.Write(buf[:n]); err != nil || werr != nil {
			return
		}
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
}
