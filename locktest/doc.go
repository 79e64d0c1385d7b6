// Package locktest tortures your own Go lock inside go test, as
// testing/fstest.TestFS does for file systems: it starts real servers,
// runs locktorture's scenarios (Kleppmann's pause, a lease watchdog frozen
// by a stop-the-world pause, fencing...) against your lock as subtests,
// checks every history for two holders at once, stale writes and lost
// updates, and fails a subtest whose verdict differs from what your lock
// claims.
//
// You write a constructor of your lock client (NewLock) and call Run. The
// clients run as processes — the test binary itself, re-executed, which is
// why TestMain must call Main — so that a pause freezes everything your
// client started, its library's goroutines included. A complete test of a
// Redis SET NX PX lock whose value is the client's number, deleted only by
// its owner:
//
//	func TestMain(m *testing.M) { locktest.Main(m) }
//	type lock struct{ rdb *redis.Client; cfg locktest.Config }
//	var unlock = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)
//
//	func (l lock) Acquire(ctx context.Context, key string) (locktest.Grant, error) {
//		start := time.Now()
//		ok, err := l.rdb.SetNX(ctx, key, l.cfg.Process, l.cfg.TTL).Result()
//		if err == nil && !ok {
//			err = locktest.ErrBusy
//		}
//		return locktest.Grant{Lease: l.cfg.TTL*9/10 - time.Since(start)}, err
//	}
//	func (l lock) Release(ctx context.Context, key string) error {
//		n, err := unlock.Run(ctx, l.rdb, []string{key}, l.cfg.Process).Int()
//		if err == nil && n == 0 {
//			err = locktest.ErrNotHeld
//		}
//		return err
//	}
//	func (l lock) Close() error { return l.rdb.Close() }
//
//	func TestLock(t *testing.T) {
//		locktest.Run(t, locktest.Suite{
//			New: func(ctx context.Context, cfg locktest.Config) (locktest.Lock, error) {
//				cr := cfg.Credentials("redis", 0) // the servers ask for a password, as the CLI's do
//				return lock{redis.NewClient(&redis.Options{Addr: cfg.Servers.Redis[0], Username: cr.Username,
//					Password: cr.Password, MaxRetries: -1}), cfg}, nil
//			},
//			Claim:     locktest.StaleHolderPossible,
//			Scenarios: []string{"baseline", "kleppmann-pause"},
//		})
//	}
//
// Released with a plain DEL instead, the same lock fails that claim: the
// paused client, waking, deletes the next holder's lock, and locktest
// reports a double grant.
//
// A claim is judged both ways: Safe fails on two holders at once or a lost
// update; StaleHolderPossible fails when a scenario that pauses a client
// inside its critical section past the lease shows no stale holder, and on
// a double grant. A delay of a client's replies past the lease (delay,
// inflight-delay), or a pause at a time rather than on a step, may or may
// not make a stale holder: both verdicts pass. A pause before the client
// holds anything (delay holds client 1 back so) makes none;
// FencedWrites also wants the stale holder's writes rejected. Suite.Claims
// sets a claim per scenario; Suite.Like takes a built-in backend's
// expectations instead. Result.Meets judges a finished run against another
// claim. A lock that renews its lease itself reports each renewal with
// Config.Extended and a lock it gave up with Config.Lost.
//
// Each scenario is a subtest (go test -run 'TestSetNX/kleppmann-pause').
// Scenarios are built-in names (locktorture list scenarios) or scenario
// files; left out, every built-in one that applies to the lock's servers
// (Suite.Kinds, default redis) runs.
//
// Servers are local processes (redis-server, postgres, etcd, zookeeper on
// PATH) by default; LOCKTEST_SERVERS=docker runs them in containers (the
// test must import _ "github.com/locktorture/locktorture/cluster/docker"),
// LOCKTEST_IMAGES (all=REF, or KIND=REF,...) names their images, and
// LOCKTEST_SERVERS=path/to/servers.yaml uses servers someone else runs
// (a locktorture servers file: docs/servers-file.md in its repository).
// Servers start once per test binary where a scenario allows it (its
// faults act on clients only) and are shared by the subtests, each run in
// a key namespace of its own; a scenario with server faults starts its own.
// Where no server can run, the subtests skip, saying what to install.
//
// A failing subtest prints the verdict in plain words, the first
// violations, the seed, the command that repeats the run (-locktest.seed=N
// or LOCKTEST_SEED) and the path of its full report (HTML, plots, the
// history), kept under LOCKTEST_STORE or a temporary directory; a passing
// subtest's report is removed. go test -short cuts each scenario to its
// scripted faults plus one lease.
//
// Suite.InProcess runs the clients as goroutines instead, which starts
// faster, but its pauses are cooperative: a client stops at its next step
// while the lock's own goroutines run on.
package locktest
