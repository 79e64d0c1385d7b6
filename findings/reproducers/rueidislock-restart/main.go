// Command rueidislock-restart: rueidislock (github.com/redis/rueidis) keeps a
// holder's context live while its Redis is down and, restarted without
// persistence, grants the lock to another client. README: "The returned ctx
// will be canceled automatically and immediately once the KeyMajority is not
// held anymore, for example: Redis are down." It runs its own redis-server,
// KeyMajority 1, SIGKILLs it on A's grant and starts it again; B locks. A's
// proxy refuses A for -down (0: A's backoff races B). `go run .`: exit 1 = seen.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

var srv *exec.Cmd // the redis-server

func main() {
	port := flag.String("port", "6390", "a free port for the redis-server this program runs")
	down := flag.Duration("down", 3*time.Second, "how long A's proxy refuses A after the kill")
	flag.Parse()
	addr, bg := "127.0.0.1:"+*port, context.Background()
	start(*port)
	ln, err := net.Listen("tcp", "127.0.0.1:0") // A's proxy
	check(err)
	go serve(ln, addr)
	ctxA, _, err := locker(ln.Addr().String()).TryWithContext(bg, "restart")
	check(err)
	t0 := time.Now()
	since := func() float64 { return time.Since(t0).Seconds() }
	check(ln.Close()) // A's Redis is down: refused, until -down has passed
	time.AfterFunc(*down, func() { ln, err := net.Listen("tcp", ln.Addr().String()); check(err); go serve(ln, addr) })
	_, _ = srv.Process.Kill(), srv.Wait() // SIGKILL: the key is gone with it
	start(*port)
	fmt.Printf("A granted at 0 (KeyMajority 1, KeyValidity 20s); %.3fs its Redis killed and up again, without the key\n", since())
	b, bAt := locker(addr), 0.0
	for ; bAt == 0 && ctxA.Err() == nil && since() < 10; time.Sleep(5 * time.Millisecond) {
		if _, _, err := b.TryWithContext(bg, "restart"); err == nil && ctxA.Err() == nil {
			bAt = since()
			fmt.Printf("%.3fs B granted on the restarted server; A's context is live\n", bAt)
		}
	}
	<-ctxA.Done()
	fmt.Printf("%.3fs A's context: %v\n", since(), ctxA.Err())
	_ = srv.Process.Kill()
	if bAt == 0 {
		fmt.Println("not reproduced: A's context ended before B was granted")
		return
	}
	fmt.Printf("REPRODUCED: two holders for %.3fs\n", since()-bAt)
	os.Exit(1)
}

// start runs redis-server without persistence on port, until it answers.
func start(port string) {
	srv = exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	check(srv.Start())
	for c, err := net.Dial("tcp", "127.0.0.1:"+port); err != nil || c.Close() != nil; c, err = net.Dial("tcp", "127.0.0.1:"+port) {
		time.Sleep(2 * time.Millisecond)
	}
}

// serve forwards each connection accepted on l to target.
func serve(l net.Listener, target string) {
	for c, err := l.Accept(); err == nil; c, err = l.Accept() {
		go func() {
			if s, err := net.Dial("tcp", target); err == nil {
				go func() { _, _ = io.Copy(s, c); _ = s.Close() }()
				_, _ = io.Copy(c, s)
			}
			_ = c.Close()
		}()
	}
}

func locker(addr string) rueidislock.Locker {
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{KeyMajority: 1, KeyValidity: 20 * time.Second,
		ClientOption: rueidis.ClientOption{InitAddress: []string{addr}}})
	check(err)
	return l
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		if srv != nil && srv.Process != nil {
			_ = srv.Process.Kill() // no redis-server left behind
		}
		os.Exit(2)
	}
}
