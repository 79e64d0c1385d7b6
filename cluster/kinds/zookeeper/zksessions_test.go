package zookeeper

import (
	"context"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locktorture/locktorture/cluster"
)

// TestZKSessionPassword: java.util.Random(seed).nextBytes, as ZooKeeper
// derives a session's password, for seeds whose bytes Java gives.
func TestZKSessionPassword(t *testing.T) {
	for _, tc := range []struct {
		id   int64
		want string // new Random(id ^ 0xB3415C00L).nextBytes(new byte[16]), from Java
	}{
		// new Random(0xB3415C00L ^ 0xB3415C00L) = new Random(0):
		// nextBytes gives 60 b4 20 bb 38 51 d9 d4 7a cb 93 3d be 70 39 9b.
		{0xB3415C00, "60b420bb3851d9d47acb933dbe70399b"},
	} {
		if got := hex.EncodeToString(zkSessionPassword(tc.id)); got != tc.want {
			t.Errorf("id %#x: %s, want %s", tc.id, got, tc.want)
		}
	}
}

// TestZooKeeperKillSessions: the holder of a lock (the oldest ephemeral
// node under its parent) has its session closed by the server: its node
// goes, it hears its session expired; the waiter's node and session stay.
// Whatever the lock recipe's layout: a root and a key (/lt/k0), or tooz's
// root of two (/tooz/locks/<name>).
func TestZooKeeperKillSessions(t *testing.T) {
	requireZooKeeper(t)
	ctx := context.Background()
	c, err := cluster.New(cluster.Options{TempDir: t.TempDir(), LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	z, err := Start(ctx, c, Options{Ensemble: cluster.Ensemble{Members: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.SessionKillers()) != 1 {
		t.Fatalf("session killers: %d, want the ensemble", len(c.SessionKillers()))
	}
	addr := z.Members()[0].Addr()
	for _, tc := range []struct {
		name    string
		parents []string // made in order; the lock nodes go under the last
	}{
		{"root and key", []string{"/lt", "/lt/k0"}},
		{"tooz", []string{"/tooz", "/tooz/locks", "/tooz/locks/locktorture-k0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			holder, events, err := zk.Connect([]string{addr}, 2*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkQuiet{}))
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close()
			waiter := zkConnect(t, addr)
			for _, p := range tc.parents {
				if _, err := holder.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
					t.Fatal(err)
				}
			}
			parent := tc.parents[len(tc.parents)-1]
			hn, err := holder.Create(parent+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
			if err != nil {
				t.Fatal(err)
			}
			wn, err := waiter.Create(parent+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
			if err != nil {
				t.Fatal(err)
			}
			ended, err := z.KillSessions(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(ended) != 1 || ended[0]["node"] != hn {
				t.Fatalf("ended %v, want the holder's %s", ended, hn)
			}
			for _, tc := range []struct {
				node   string
				exists bool
			}{{hn, false}, {wn, true}} {
				ok, _, err := waiter.Exists(tc.node)
				if err != nil || ok != tc.exists {
					t.Errorf("%s exists: %v (%v), want %v", tc.node, ok, err, tc.exists)
				}
			}
			// go-zookeeper reports the expiry and then opens a new session.
			timeout := time.After(5 * time.Second)
			for {
				select {
				case ev := <-events:
					if ev.State == zk.StateExpired {
						return
					}
				case <-timeout:
					t.Fatal("the holder's client did not hear that its session expired")
				}
			}
		})
	}
}
