// Command rueidislock-renew-partition: rueidislock (github.com/redis/rueidis)
// cancels a holder's context ~1s after its keys expired on Redis and another
// client took the lock, when the holder is cut off from Redis after its grant.
// README: "The returned ctx will be canceled automatically and immediately
// once the KeyMajority is not held anymore". Client A goes through a TCP proxy
// here, cut (nothing forwarded, bytes held) for a partition; B goes direct.
//
//	go run . -redis 127.0.0.1:6379   # exit 1: reproduced, 0: not
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

var cut atomic.Bool // set: the proxy forwards nothing

func main() {
	addr := flag.String("redis", "127.0.0.1:6379", "Redis address")
	flag.Parse()
	locker := func(a string) rueidislock.Locker { // TryNextAfter 1s, not 20ms: for a loaded machine
		l, err := rueidislock.NewLocker(rueidislock.LockerOption{TryNextAfter: time.Second,
			ClientOption: rueidis.ClientOption{InitAddress: []string{a}}, KeyValidity: 2 * time.Second})
		check(err)
		return l
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	go proxy(ln, *addr)
	a, b := locker(ln.Addr().String()), locker(*addr)
	bg, name := context.Background(), fmt.Sprintf("renew-partition-%d", time.Now().UnixNano())
	ctxA, _, err := a.TryWithContext(bg, name)
	check(err)
	start := time.Now()
	cut.Store(true)
	fmt.Println("0.000s A granted (KeyValidity 2s, extended every 1s); A's link to Redis is cut")
	var bAt time.Duration
	for bAt == 0 && ctxA.Err() == nil && time.Since(start) < 10*time.Second {
		if _, _, err := b.TryWithContext(bg, name); err == nil {
			bAt = time.Since(start)
			fmt.Printf("%.3fs B granted: A's keys have expired on Redis\n", bAt.Seconds())
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-ctxA.Done():
	case <-time.After(10 * time.Second):
	}
	aAt := time.Since(start)
	fmt.Printf("%.3fs A's context: %v (nil: still live)\n", aAt.Seconds(), ctxA.Err())
	if bAt > 0 && aAt > bAt {
		fmt.Printf("REPRODUCED: B held the lock while A's context was live, for %.3fs\n", (aAt - bAt).Seconds())
		os.Exit(1)
	}
	fmt.Println("not reproduced: B was not granted while A's context was live")
}

// proxy forwards each connection l accepts to target.
func proxy(l net.Listener, target string) {
	for {
		c, err := l.Accept()
		check(err)
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
