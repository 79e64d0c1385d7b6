// Command redlock-clock-jump shows github.com/go-redsync/redsync/v4 (Redlock
// over five Redis servers A-E) granting one lock to two clients when one
// server's clock jumps past the lock's TTL.
//
// Two stand-ins let it run against five plain redis-servers. A partition:
// client 1 reaches A, B, C but not D, E; client 2 reaches C, D, E but not
// A, B (its connections to the others fail at once). The clock jump: Redis
// expires a key once its wall clock passes the key's absolute expiry time,
// so a jump on C past the TTL has exactly the effect of "PEXPIRE key 1" on
// C, which this program sends.
//
//	go run . -servers A,B,C,D,E   # exit 1: reproduced, 0: not
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

const ttl = 10 * time.Second // the lock's expiry

func main() {
	list := flag.String("servers", "127.0.0.1:6379,127.0.0.1:6380,127.0.0.1:6381,127.0.0.1:6382,127.0.0.1:6383", "five Redis addresses: A,B,C,D,E")
	flag.Parse()
	redis.SetLogger(quiet{}) // not its dial errors to the cut-off servers
	addrs := strings.Split(*list, ",")
	if len(addrs) != 5 {
		fmt.Fprintln(os.Stderr, "-servers: want 5 addresses, got", len(addrs))
		os.Exit(2)
	}
	// over builds one client's redsync over all five servers, reaching only
	// those in reach (the rest are cut off from it).
	over := func(reach string) *redsync.Redsync {
		var pools []rsredis.Pool
		for i, a := range addrs {
			o := &redis.Options{Addr: a, MaxRetries: -1, DialerRetries: 1}
			if !strings.ContainsRune(reach, rune('A'+i)) {
				o.Dialer = cut
			}
			pools = append(pools, goredis.NewPool(redis.NewClient(o)))
		}
		return redsync.New(pools...)
	}
	ctx := context.Background()
	key := fmt.Sprintf("redlock-clock-jump-%d", time.Now().UnixNano())
	start := time.Now()
	since := func() string { return fmt.Sprintf("%.3fs", time.Since(start).Seconds()) }

	m1 := over("ABC").NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(1))
	if err := m1.LockContext(ctx); err != nil {
		fmt.Println("client 1 could not lock A, B, C:", err)
		os.Exit(2)
	}
	fmt.Printf("%s client 1 locked %s on A, B, C (3 of 5); its lock is valid until %.3fs\n",
		since(), key, m1.Until().Sub(start).Seconds())

	c := redis.NewClient(&redis.Options{Addr: addrs[2]})
	ok, err := c.PExpire(ctx, key, time.Millisecond).Result()
	fmt.Printf("%s C's clock jumps past the TTL (PEXPIRE %s 1 on C: %v %v)\n", since(), key, ok, err)
	time.Sleep(10 * time.Millisecond)

	m2 := over("CDE").NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(1))
	err = m2.LockContext(ctx)
	fmt.Printf("%s client 2 Lock on C, D, E: %v\n", since(), errOr(err))
	if err == nil && time.Now().Before(m1.Until()) {
		fmt.Printf("REPRODUCED: two holders of %s; client 1's lock is still valid for %.3fs\n",
			key, time.Until(m1.Until()).Seconds())
		os.Exit(1)
	}
	fmt.Println("not reproduced: client 2 was refused while client 1 holds the lock")
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func cut(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("partitioned")
}

func errOr(err error) string {
	if err == nil {
		return "granted"
	}
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
