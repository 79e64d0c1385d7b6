package zookeeper

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/locktorture/locktorture/cluster/links"

	"github.com/locktorture/locktorture/cluster"
)

// zkModes returns each member's mode ("" while it does not serve).
func zkModes(ctx context.Context, z *ZooKeeper) map[string]string {
	out := map[string]string{}
	for _, m := range z.Members() {
		mode, _ := m.Mode(ctx)
		out[m.Name()] = mode
	}
	return out
}

// TestZooKeeperMemberCut: with links enabled, a 3-member ensemble's
// members dial one another through links of their own (each zoo.cfg names
// the others at link addresses); cutting the leader from both followers
// (both directions of both pairs) makes it stop serving while the two
// elect a new leader between them and take writes; at the heal the old
// leader rejoins as a follower and has the writes. Without links, no
// member has links to cut.
func TestZooKeeperMemberCut(t *testing.T) {
	requireZooKeeper(t)
	ctx := context.Background()
	tmp := t.TempDir()
	plain, err := cluster.New(cluster.Options{TempDir: t.TempDir(), LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	pz, err := Start(ctx, plain, Options{Ensemble: cluster.Ensemble{Members: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if ls := plain.PeerLinks(pz.members[0], pz.members[1]); ls != nil || plain.Peers() != nil {
		t.Errorf("without links enabled: peer links %v, peers %v", ls, plain.Peers())
	}
	_ = plain.Close()

	c, err := cluster.New(cluster.Options{TempDir: tmp, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.EnableLinks()
	z, err := Start(ctx, c, Options{Ensemble: cluster.Ensemble{Members: 3}})
	if err != nil {
		t.Fatal(err)
	}
	ms := z.Members()
	if len(c.Peers()) != 3 {
		t.Fatalf("peers %v", c.Peers())
	}
	for _, m := range ms {
		cfg, err := os.ReadFile(filepath.Join(m.DataDir(), "zoo.cfg"))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range ms {
			ls := c.PeerLinks(m, o)
			if o == m {
				if ls != nil || !strings.Contains(string(cfg), fmt.Sprintf("server.%d=%s:%d:%d\n", o.id, o.Host(), o.quorumPort, o.electionPort)) {
					t.Errorf("%s: its own line is not its own ports, or it has links to itself", m.Name())
				}
				continue
			}
			if len(ls) != 2 {
				t.Fatalf("%s->%s: %d links", m.Name(), o.Name(), len(ls))
			}
			_, qp, _ := net.SplitHostPort(ls[0].Addr())
			_, ep, _ := net.SplitHostPort(ls[1].Addr())
			if want := fmt.Sprintf("server.%d=127.0.0.1:%s:%s\n", o.id, qp, ep); !strings.Contains(string(cfg), want) {
				t.Errorf("%s's zoo.cfg has no %q:\n%s", m.Name(), want, cfg)
			}
		}
	}

	leader, err := z.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var others []*Member
	var addrs []string
	for _, m := range ms {
		if m != leader {
			others = append(others, m)
			addrs = append(addrs, m.Addr())
		}
	}
	conn := zkConnect(t, addrs...)
	if _, err := conn.Create("/before", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	var held []*links.Link
	var handles []string
	for _, o := range others {
		for _, l := range append(c.PeerLinks(leader, o), c.PeerLinks(o, leader)...) {
			h, err := l.Hold(ctx, links.BothWays)
			if err != nil {
				t.Fatal(err)
			}
			held, handles = append(held, l), append(handles, h)
		}
	}
	cut := time.Now()
	var newLeader *Member
	err = cluster.WaitFor(ctx, 60*time.Second, func() error {
		modes := zkModes(ctx, z)
		for _, o := range others {
			if modes[o.Name()] == "leader" {
				newLeader = o
			}
		}
		if newLeader == nil || modes[leader.Name()] != "" {
			return fmt.Errorf("modes %v", modes)
		}
		for _, o := range others {
			if o != newLeader && modes[o.Name()] != "follower" {
				return fmt.Errorf("modes %v", modes)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("after cutting the leader %s from the others: %v", leader.Name(), err)
	}
	t.Logf("cut the leader %s from the others: %s leads after %v", leader.Name(), newLeader.Name(), time.Since(cut).Round(time.Millisecond))
	if _, err := conn.Create("/during", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Errorf("the majority takes no write: %v", err)
	}
	if _, err := leader.Mode(ctx); err == nil {
		t.Errorf("the cut old leader still serves")
	}

	for i, l := range held {
		if err := l.Heal(ctx, handles[i]); err != nil {
			t.Fatal(err)
		}
	}
	healed := time.Now()
	err = cluster.WaitFor(ctx, 60*time.Second, func() error {
		if mode, err := leader.Mode(ctx); err != nil || mode != "follower" {
			return fmt.Errorf("old leader %q, %v", mode, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("after the heal: %v", err)
	}
	t.Logf("healed: the old leader %s follows after %v", leader.Name(), time.Since(healed).Round(time.Millisecond))
	only := zkConnect(t, leader.Addr())
	if _, err := only.Sync("/during"); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := only.Exists("/during"); err != nil || !ok {
		t.Errorf("the old leader does not have the write made during the cut: %v %v", ok, err)
	}
}
