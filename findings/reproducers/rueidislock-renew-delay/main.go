// Command rueidislock-renew-delay: rueidislock (github.com/redis/rueidis) lets
// a holder's keys expire on Redis when replies to it are slow, and cancels its
// context only after another client took the lock. README: "The returned ctx
// will be canceled automatically and immediately once the KeyMajority is not
// held anymore". A reaches Redis through a TCP proxy here that holds each
// reply 1.5s (requests pass at once); B goes direct. It needs the extension
// script out of Redis's script cache, as on a fresh server (the first
// extension is then EVALSHA, NOSCRIPT, EVAL: two delayed round trips), so it
// sends SCRIPT FLUSH first. Without it, run twice (the script cached), A's
// context ends as its keys expire, give or take a few ms: not reproduced.
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

var lag atomic.Int64 // the proxy's delay on replies to A

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
	bg, name := context.Background(), fmt.Sprintf("renew-delay-%d", time.Now().UnixNano())
	check(b.Client().Do(bg, b.Client().B().ScriptFlush().Build()).Error())
	ctxA, _, err := a.TryWithContext(bg, name)
	check(err)
	start := time.Now()
	lag.Store(int64(1500 * time.Millisecond))
	fmt.Println("0.000s A granted (KeyValidity 2s, extended every 1s); every reply to A now takes 1.5s")
	var bAt time.Duration
	for ctxA.Err() == nil && time.Since(start) < 10*time.Second {
		if _, _, err := b.TryWithContext(bg, name); bAt == 0 && err == nil {
			bAt = time.Since(start)
			fmt.Printf("%.3fs B granted: A's keys have expired on Redis\n", bAt.Seconds())
		}
		time.Sleep(10 * time.Millisecond)
	}
	aAt := time.Since(start)
	fmt.Printf("%.3fs A's context: %v (nil: still live)\n", aAt.Seconds(), ctxA.Err())
	if bAt > 0 && aAt > bAt {
		fmt.Printf("REPRODUCED: B held the lock while A's context was live, for %.3fs\n", (aAt - bAt).Seconds())
		os.Exit(1)
	}
	fmt.Println("not reproduced: B was not granted while A's context was live")
}

// proxy forwards each connection l accepts to target, replies delayed.
func proxy(l net.Listener, target string) {
	for {
		c, _ := l.Accept()
		s, err := net.Dial("tcp", target)
		check(err)
		go io.Copy(s, c)
		go late(c, s)
	}
}

// late copies src to dst, each read written lag after it came, in order.
func late(dst io.Writer, src io.Reader) {
	prev := make(chan struct{})
	close(prev)
	for {
		b := make([]byte, 64<<10)
		n, err := src.Read(b)
		at, wait, done := time.Now().Add(time.Duration(lag.Load())), prev, make(chan struct{})
		go func() { time.Sleep(time.Until(at)); <-wait; dst.Write(b[:n]); close(done) }()
		if prev = done; err != nil {
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
