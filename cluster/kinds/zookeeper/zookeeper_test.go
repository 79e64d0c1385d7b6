package zookeeper

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locktorture/locktorture/internal/leakcheck"
	"github.com/locktorture/locktorture/internal/testenv"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/external"
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
			c, err := cluster.New(cluster.Options{TempDir: tmp, LogDir: logs})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			start := time.Now()
			z, err := Start(ctx, c, Options{Ensemble: cluster.Ensemble{Members: tc.members}})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d member(s) serving after %v", tc.members, time.Since(start).Round(time.Millisecond))
			ms := z.Members()
			if len(ms) != tc.members || len(c.Servers()) != tc.members {
				t.Fatalf("%d members, %d servers", len(ms), len(c.Servers()))
			}
			if again, err := Start(ctx, c, Options{}); err != nil || again != z {
				t.Fatalf("second call: %p %v, want the running ensemble %p", again, err, z)
			}
			if _, err := Start(ctx, c, Options{Ensemble: cluster.Ensemble{Members: tc.members + 1}}); err == nil {
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
			if err := cluster.WaitUnit(ctx, victim.Name(), victim.Unit(), victim.serving); err != nil {
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
			if _, err := Start(ctx, c, Options{}); !errors.Is(err, cluster.ErrClosed) {
				t.Errorf("zookeeper on a closed cluster: %v", err)
			}
		})
	}
}

func TestZooKeeperMissingJavaNamesPackage(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	c, err := cluster.New(cluster.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = Start(context.Background(), c, Options{})
	if !errors.Is(err, cluster.ErrMissingBinary) || !strings.Contains(err.Error(), "default-jre-headless") {
		t.Errorf("want ErrMissingBinary naming default-jre-headless, got %v", err)
	}
}

// TestZooKeeperConfig: a single member has no server lines (standalone);
// every member of three names all three, with its own client port.
func TestZooKeeperConfig(t *testing.T) {
	member := func(port, id, quorum, election int, dir string) *Member {
		s := cluster.NewFaultable(Kind, "")
		s.SetAddr("127.0.0.1", port)
		return &Member{Faultable: s, id: id, quorumPort: quorum, electionPort: election, dataDir: dir}
	}
	ms := []*Member{member(1, 1, 2, 3, "/d1"), member(4, 2, 5, 6, "/d2"), member(7, 3, 8, 9, "/d3")}
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

// TestExternalCleanupZooKeeper: the run's znodes go; the owner's and
// another run's stay.
func TestExternalCleanupZooKeeper(t *testing.T) {
	testenv.Require(t, "java")
	ctx := context.Background()
	c, err := cluster.New(cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	z, err := Start(ctx, c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	addr := z.Members()[0].Addr()
	f, err := cluster.LoadServersFile(testenv.WriteFile(t, "s.yaml", "zookeeper: ["+addr+"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	ns := external.NewNamespace()
	conn := zkConnect(t, addr)
	for _, p := range []string{"/app", "/locktorture", "/locktorture/k0", "/locktorture/lt00000000:k0", "/locktorture/" + ns + ":k0", "/locktorture/" + ns + ":k0/lock-0000000001", "/locktorture/" + ns + ":k11"} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	if err := external.Cleanup(ctx, f, ns, []string{"zookeeper"}); err != nil {
		t.Fatal(err)
	}
	kids, _, err := conn.Children("/locktorture")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(kids)
	if want := []string{"k0", "lt00000000:k0"}; !slices.Equal(kids, want) {
		t.Errorf("/locktorture holds %v after the cleanup, want %v", kids, want)
	}
	if ok, _, _ := conn.Exists("/app"); !ok {
		t.Error("the owner's /app is gone")
	}
}

// TestServersFileCheckZooKeeper: a ZooKeeper server answers the check as
// itself (a session opened and closed).
func TestServersFileCheckZooKeeper(t *testing.T) {
	requireZooKeeper(t)
	c, err := cluster.New(cluster.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	z, err := Start(ctx, c, Options{Ensemble: cluster.Ensemble{Members: 1}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := cluster.LoadServersFile(testenv.WriteFile(t, "s.yaml", "zookeeper: ["+z.Members()[0].Addr()+"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Check(ctx, []string{"zookeeper"}, false); err != nil {
		t.Fatalf("a ZooKeeper server refused: %v", err)
	}
}
