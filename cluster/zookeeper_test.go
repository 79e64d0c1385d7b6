package cluster

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locktorture/locktorture/internal/leakcheck"
	"github.com/locktorture/locktorture/internal/testenv"
)

// requireZooKeeper skips (fails under CI) without java and Debian's
// zookeeper.jar.
func requireZooKeeper(t *testing.T) {
	t.Helper()
	testenv.Require(t, "java")
	for _, j := range zookeeperJars {
		if _, err := os.Stat(j); err != nil {
			testenv.Missing(t, "zookeeper ("+j+")")
		}
	}
}

// zkConnect is a ZooKeeper client of the test's own on addrs.
func zkConnect(t *testing.T, addrs ...string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect(addrs, 2*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkQuiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// TestZooKeeper: 1 and 3 members start serving on distinct loopback
// ports with their data under the cluster's temp dir and their logs in the
// log dir; a write survives pause/resume and kill -9/restart of a member
// (a follower when there are three: the other two keep serving meanwhile);
// Close stops every member, a paused one too, and nothing is left.
func TestZooKeeper(t *testing.T) {
	requireZooKeeper(t)
	for _, tc := range []struct {
		name    string
		members int
		mode    string // the first member's mode family
	}{
		{"single", 1, "standalone"},
		{"three", 3, "leader/follower"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			tmp, logs := t.TempDir(), t.TempDir()
			c, err := New(Options{TempDir: tmp, LogDir: logs})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			start := time.Now()
			z, err := c.ZooKeeper(ctx, ZooKeeperOptions{Members: tc.members})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d member(s) serving after %v", tc.members, time.Since(start).Round(time.Millisecond))
			ms := z.Members()
			if len(ms) != tc.members || len(c.Servers()) != tc.members {
				t.Fatalf("%d members, %d servers", len(ms), len(c.Servers()))
			}
			if again, err := c.ZooKeeper(ctx, ZooKeeperOptions{}); err != nil || again != z {
				t.Fatalf("second call: %p %v, want the running ensemble %p", again, err, z)
			}
			if _, err := c.ZooKeeper(ctx, ZooKeeperOptions{Members: tc.members + 1}); err == nil {
				t.Error("asking for another member count while one runs should fail")
			}
			seen := map[string]bool{}
			leaders := 0
			for _, m := range ms {
				for _, a := range []string{m.Addr(), m.quorumAddr(), m.electionAddr()} {
					if seen[a] || !strings.HasPrefix(a, "127.0.0.1:") {
						t.Errorf("address %s used twice or not on loopback", a)
					}
					seen[a] = true
				}
				mode, err := m.Mode(ctx)
				if err != nil || !strings.Contains(tc.mode, mode) {
					t.Errorf("%s mode %q (%v), want one of %s", m.Name(), mode, err, tc.mode)
				}
				if mode == "leader" || mode == "standalone" {
					leaders++
				}
				if !strings.HasPrefix(m.DataDir(), c.TempDir()) || !strings.HasPrefix(m.LogPath(), logs) {
					t.Errorf("%s: data %s, log %s", m.Name(), m.DataDir(), m.LogPath())
				}
				if v, err := c.ServerVersion(ctx, m); err != nil || !strings.HasPrefix(v, "3.") {
					t.Errorf("%s version %q, %v", m.Name(), v, err)
				}
				if _, err := m.fourLetter(ctx, "conf"); err != nil {
					t.Errorf("conf: %v", err)
				}
			}
			if leaders != 1 {
				t.Errorf("%d leaders", leaders)
			}
			if n := len(leakcheck.ProcessesUnder(tmp)); n != tc.members {
				t.Fatalf("leak check sees %d members, want %d", n, tc.members)
			}
			leader, err := z.Leader(ctx)
			if err != nil {
				t.Fatal(err)
			}
			victim := ms[len(ms)-1] // a follower when there are three
			if tc.members > 1 && victim == leader {
				victim = ms[0]
			}
			var addrs []string
			for _, m := range ms {
				addrs = append(addrs, m.Addr())
			}
			conn := zkConnect(t, addrs...)
			if _, err := conn.Create("/survivor", []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}

			if err := victim.Pause(ctx); err != nil {
				t.Fatal(err)
			}
			if st := testenv.ProcState(t, victim.PID()); st != "T" {
				t.Errorf("paused member in state %q, want T", st)
			}
			if _, err := victim.Mode(ctx); err == nil {
				t.Error("a paused member answers srvr")
			}
			if err := victim.Resume(ctx); err != nil {
				t.Fatal(err)
			}
			if err := WaitUnit(ctx, victim.name, victim.p, victim.serving); err != nil {
				t.Fatalf("after resume: %v", err)
			}

			addr := victim.Addr()
			if err := victim.Kill(ctx); err != nil {
				t.Fatal(err)
			}
			if victim.Running() || victim.serving(ctx) == nil {
				t.Fatal("a killed member still answers")
			}
			if tc.members > 1 {
				// The two left still serve, and take a write.
				if _, err := leader.Mode(ctx); err != nil {
					t.Errorf("leader with one follower down: %v", err)
				}
				if _, err := conn.Create("/while-down", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
					t.Errorf("write with one member down: %v", err)
				}
			}
			if err := victim.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			if victim.Addr() != addr {
				t.Errorf("restart moved the member from %s to %s", addr, victim.Addr())
			}
			// The restarted member has the data, read through it alone.
			only := zkConnect(t, victim.Addr())
			if _, err := only.Sync("/survivor"); err != nil {
				t.Fatal(err)
			}
			if b, _, err := only.Get("/survivor"); err != nil || string(b) != "v" {
				t.Errorf("after kill -9 and restart: %q, %v", b, err)
			}

			if err := ms[0].Pause(ctx); err != nil {
				t.Fatal(err)
			}
			conn.Close()
			only.Close()
			start = time.Now()
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			t.Logf("Close took %v", time.Since(start).Round(time.Millisecond))
			if left := leakcheck.ProcessesUnder(tmp); len(left) > 0 {
				t.Errorf("left after Close: %v", left)
			}
			if left := leakcheck.TempDirsLeft(tmp); len(left) > 0 {
				t.Errorf("temp dirs left after Close: %v", left)
			}
			for _, m := range ms {
				if b, err := os.ReadFile(m.LogPath()); err != nil || !strings.Contains(string(b), "ZooKeeper") {
					t.Errorf("%s log %s: %d bytes, %v", m.Name(), m.LogPath(), len(b), err)
				}
			}
			if _, err := c.ZooKeeper(ctx, ZooKeeperOptions{}); !errors.Is(err, ErrClosed) {
				t.Errorf("zookeeper on a closed cluster: %v", err)
			}
		})
	}
}

func TestZooKeeperMissingJavaNamesPackage(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	c, err := New(Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.ZooKeeper(context.Background(), ZooKeeperOptions{})
	if !errors.Is(err, ErrMissingBinary) || !strings.Contains(err.Error(), "default-jre-headless") {
		t.Errorf("want ErrMissingBinary naming default-jre-headless, got %v", err)
	}
}

// TestZooKeeperConfig: a single member has no server lines (standalone);
// every member of three names all three, with its own client port.
func TestZooKeeperConfig(t *testing.T) {
	ms := []*ZooKeeperMember{
		{Faultable: Faultable{program: program{host: "127.0.0.1", port: 1}}, id: 1, quorumPort: 2, electionPort: 3, dataDir: "/d1"},
		{Faultable: Faultable{program: program{host: "127.0.0.1", port: 4}}, id: 2, quorumPort: 5, electionPort: 6, dataDir: "/d2"},
		{Faultable: Faultable{program: program{host: "127.0.0.1", port: 7}}, id: 3, quorumPort: 8, electionPort: 9, dataDir: "/d3"},
	}
	one := zookeeperConfig(ms[0], ms[:1])
	if strings.Contains(one, "server.") || !strings.Contains(one, "clientPort=1\n") || !strings.Contains(one, "admin.enableServer=false") {
		t.Errorf("single member config:\n%s", one)
	}
	three := zookeeperConfig(ms[1], ms)
	for _, want := range []string{"server.1=127.0.0.1:2:3\n", "server.2=127.0.0.1:5:6\n", "server.3=127.0.0.1:8:9\n", "clientPort=4\n", "dataDir=/d2\n"} {
		if !strings.Contains(three, want) {
			t.Errorf("member 2 of 3: no %q in\n%s", want, three)
		}
	}
}
