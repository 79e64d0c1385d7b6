// Command etcd-22082 reproduces etcd-io/etcd#22082 with go.etcd.io/etcd/client/v3
// against one etcd server: a retried Unlock of concurrency.Mutex deletes the
// newer lock of the same session, and another session is granted the lock
// while its holder still holds it.
//
// A lost reply is simulated by wrapping the client's KV (as namespace.NewKV
// does): the first Unlock's Delete reaches the server and is applied, then
// its reply is replaced by an error, as when the connection drops after the
// server applied the request. The application retries that Unlock later.
//
//	go run . -endpoint 127.0.0.1:2379   # exit 1: reproduced, 0: not
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// lossyKV loses the reply of the next Delete once lose is set.
type lossyKV struct {
	clientv3.KV
	lose bool
}

func (k *lossyKV) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	resp, err := k.KV.Delete(ctx, key, opts...)
	if k.lose && err == nil {
		k.lose = false
		return nil, errors.New("connection reset (simulated: the server applied the delete, its reply was lost)")
	}
	return resp, err
}

func main() {
	endpoint := flag.String("endpoint", "127.0.0.1:2379", "etcd client address")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli := must(clientv3.New(clientv3.Config{Endpoints: []string{*endpoint}, DialTimeout: 5 * time.Second}))
	defer cli.Close()
	kv := &lossyKV{KV: cli.KV}
	cli.KV = kv
	s1 := must(concurrency.NewSession(cli)) // one session for the life of the client
	defer s1.Close()
	pfx := fmt.Sprintf("/etcd-22082-%d", time.Now().UnixNano())

	m1 := concurrency.NewMutex(s1, pfx)
	check(m1.Lock(ctx))
	fmt.Printf("m1 (session 1) locked: key %s\n", m1.Key())
	kv.lose = true
	fmt.Printf("m1.Unlock: %v -> the application will retry it\n", m1.Unlock(ctx))

	m2 := concurrency.NewMutex(s1, pfx) // same session, next critical section
	check(m2.Lock(ctx))
	fmt.Printf("m2 (session 1) locked: key %s (the same key as m1's)\n", m2.Key())

	fmt.Printf("m1.Unlock retried: %v\n", m1.Unlock(ctx))

	cli2 := must(clientv3.New(clientv3.Config{Endpoints: []string{*endpoint}, DialTimeout: 5 * time.Second}))
	defer cli2.Close()
	s2 := must(concurrency.NewSession(cli2))
	defer s2.Close()
	m3 := concurrency.NewMutex(s2, pfx)
	err := m3.TryLock(ctx)
	resp := must(cli.Txn(ctx).If(m2.IsOwner()).Commit())
	fmt.Printf("m3 (session 2) TryLock: %v\n", err)
	fmt.Printf("m2 never unlocked; etcd says m2 is owner: %v\n", resp.Succeeded)
	if err == nil {
		fmt.Println("REPRODUCED: m2 and m3 both hold", pfx, "- the retried Unlock deleted m2's key")
		os.Exit(1)
	}
	fmt.Println("not reproduced: m3 was refused while m2 holds the lock")
}

func must[T any](v T, err error) T {
	check(err)
	return v
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
}
