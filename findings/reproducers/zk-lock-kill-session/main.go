// Command zk-lock-kill-session: when the holder's session ends, ZooKeeper at
// once grants go-zookeeper's zk.Lock ("Lock is a mutual exclusion lock") to the
// client waiting in line; zk.Lock gives the holder no way to know. The session
// ends by an ordinary expiry here (locktorture re-attaches with its id and
// password and closes it; go-zookeeper cannot): A goes through a TCP proxy, cut
// (bytes held) past the session timeout while B waits in Lock, then restored.
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
	path, acl := fmt.Sprintf("/zk-lock-kill-session-%d", time.Now().UnixNano()), zk.WorldACL(zk.PermAll)
	a, b := zk.NewLock(connA, path, acl), zk.NewLock(connB, path, acl)
	check(a.Lock())
	for len(events) > 0 { // the events of A's connecting
		<-events
	}
	granted := make(chan error, 1)
	go func() { granted <- b.Lock() }()
	for ch, _, _ := connB.Children(path); len(ch) < 2; ch, _, _ = connB.Children(path) {
		time.Sleep(10 * time.Millisecond) // until B's node is in line behind A's
	}
	start := time.Now()
	since := func() float64 { return time.Since(start).Seconds() }
	cut.Store(true)
	time.AfterFunc(time.Minute, func() { fmt.Println("not reproduced: B not granted in 1m"); os.Exit(0) })
	fmt.Println("0.000s A holds the lock, B waits in Lock; A's link to ZooKeeper is cut (session timeout asked: 4s)")
	go func() {
		for ev := range events {
			fmt.Printf("%.3fs A's Conn event (not from zk.Lock): %v %v\n", since(), ev.Type, ev.State)
		}
	}()
	err = <-granted
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
