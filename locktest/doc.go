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
//				cr := cfg.Credentials(locktest.KindRedis, 0) // the servers ask for a password, as the CLI's do
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
// claim.
//
// # Scenarios
//
// Each scenario is a subtest (go test -run 'TestSetNX/kleppmann-pause').
// Scenarios are built-in names or scenario files; left out, every
// built-in one that applies to the lock's servers (Suite.Kinds, default
// redis) runs. Scenarios(suite) returns exactly the names Run will run,
// in order; BuiltinScenarios lists every built-in name (locktorture list
// scenarios describes them). The defaults leave out what not every lock
// of the kind can take, which runs when named: the fault families of
// locktorture compare (pause, partition, delay, ...: docs/compare.md),
// and the scenarios that need more than one server of a kind — failover
// (Suite.Kinds redis: a Sentinel group in Servers.Sentinel, its primary
// and replica in Servers.Redis, primary first), failover-leader (etcd or
// zookeeper: three members, every one in Servers.Etcd or
// Servers.ZooKeeper; dial them all). Those start servers of their own.
//
// # Servers and credentials
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
// Every server the suite starts asks for a password of its own, as those
// of a locktorture run (and its client-check) do: a lock must log in with
// Config.Auth (Config.Credentials picks a server's entry), or its
// requests are refused.
//
// # Writing a Lock
//
// One Lock is made per simulated client, by NewLock, in that client's
// process. How the suite calls it:
//
//   - One call at a time, never two at once: Acquire; after a grant,
//     Release (always: also after Lost, or when the client's critical
//     section failed); then Acquire again, maybe of another key. A client
//     holds at most one lock. Close comes last, after the last call has
//     returned — also, when a run is aborted, with a lock still held. With
//     Suite.InProcess, other clients' Locks run at the same time in the same
//     process: what they share must be safe for that.
//   - Acquire and Release get a context whose deadline is the request
//     timeout (Config.Timeout), cancelled as soon as they return; so is
//     NewLock's (10s at most). Never keep one, or hand it to a library
//     that ties the lock's life to it: rueidislock's TryWithContext cuts
//     the lock's validity to the context's deadline and gives the lock up
//     when the context ends, so passed through it releases every lock at
//     the request timeout. Give such a library a context of the Lock's own,
//     made in NewLock from context.Background and cancelled by Close, and
//     bound the wait with Acquire's context (as below, for a lock that can
//     only block).
//   - Acquire returns ErrBusy only when the lock certainly was not taken;
//     any other error means it may have been. No Release follows an error:
//     a lock the library may still grant is the Lock's own to give back.
//   - Grant.Lease is how long the client may count on the lock: for a
//     lease lock, the TTL less the time the acquire took, less a margin;
//     for a session lock (etcd's concurrency.Mutex, a ZooKeeper ephemeral
//     node), the session's timeout — how long the server keeps the lock
//     with no word from the client: etcd's lease TTL, ZooKeeper's
//     negotiated session timeout — less the same; zero for a lock with no
//     lease at all (a PostgreSQL advisory lock, held as long as its
//     connection). The checkers count an overlap that begins before the
//     first holder's lease ends as a double grant, after it as a stale
//     holder.
//   - A lock whose watchdog renews the lease calls Config.Extended after
//     each renewal, with the new lease. A library that renews inside with
//     no hook (rueidislock, or a session's keepalive you cannot see):
//     report the lease of one grant and never call Extended. A second
//     holder after that lease's end is then judged a stale holder rather
//     than a double grant: Safe still fails on it, but StaleHolderPossible
//     cannot tell the two apart past that point. Where the library tells
//     its lock's expiry (redsync's Mutex.Until), a goroutine watching it
//     can call Extended when it moves.
//   - Config.Lost says the library gave the lock on key up (rueidislock's
//     context ended, a ZooKeeper session expired, etcd's Session.Done): the
//     client cuts its critical section short, then calls Release all the
//     same, which says what happened (ErrNotHeld when the lock was gone).
//     Lost and Extended are safe from any goroutine at any time. Lost
//     counts for key's grant from the moment Acquire is called (a lock
//     given up before Acquire returns its grant) until Release is called;
//     one outside that span is ignored. It is a notice, heard after the
//     grant: one sent just before Release may come too late to count. Stop your watchdog in Release, and
//     wait for it, so that no word of an old grant comes during the next
//     Acquire of its key.
//
// A lock that can only block (zk.Lock's Lock, sync-style APIs with no
// context) tries in a goroutine and gives up at Acquire's deadline; the
// harness asks again. Never ErrBusy then (it may be granted later): a
// grant that comes after Acquire gave up is given back at once:
//
//	func (l *zkLock) Acquire(ctx context.Context, key string) (locktest.Grant, error) {
//		start := time.Now()
//		m := zk.NewLock(l.conn, "/locks/"+key, zk.AuthACL(zk.PermAll))
//		done := make(chan error, 1)
//		go func() { done <- m.Lock() }()
//		select {
//		case err := <-done:
//			if err != nil {
//				return locktest.Grant{}, err
//			}
//			l.held[key] = m
//			return locktest.Grant{Lease: l.sessionTimeout*9/10 - time.Since(start)}, nil
//		case <-ctx.Done():
//			go func() {
//				if <-done == nil {
//					_ = m.Unlock() // granted too late: nobody holds it
//				}
//			}()
//			return locktest.Grant{}, ctx.Err()
//		}
//	}
//
// # Reports
//
// A failing subtest prints the verdict in plain words, the first
// violations, the seed, the command that repeats the run (-locktest.seed=N
// or LOCKTEST_SEED) and the path of its full report (HTML, plots, the
// history), kept under LOCKTEST_STORE or a temporary directory. A passing
// subtest's report is removed, unless LOCKTEST_KEEP=1 (or -locktest.keep)
// keeps it: the subtest logs its path (go test -v shows it) and
// Result.Dir holds it. go test -short cuts each scenario to its scripted
// faults plus one lease.
//
// Suite.InProcess runs the clients as goroutines instead, which starts
// faster, but its pauses are cooperative: a client stops at its next step
// while the lock's own goroutines run on.
//
// # Comparing with the built-in rows
//
// Compare puts the same lock in locktorture compare's table, as a row
// beside the built-in rows over the same servers (redis-token, redsync,
// rueidislock, ... for Kinds redis), through every fault family that
// applies to it, and writes what locktorture compare writes: compare.html,
// compare.txt, compare.png, results.json and junit.xml. The table and the
// path of compare.html are in the test's log (go test -v):
//
//	func TestCompareLock(t *testing.T) {
//		locktest.Compare(t, locktest.Comparison{
//			New:      newLock, // as in Suite
//			Claim:    new(locktest.StaleHolderPossible),
//			Families: []string{"pause", "partition", "delay"},
//			Beside:   []string{"redis-token", "redsync"},
//		})
//	}
//
// Each cell of the lock's row is a subtest (TestCompareLock/pause/seed-1)
// that fails when the cell is not as the claim says (Claim, Claims or
// Like, judged as Run judges), or when its run failed; with none of them
// the row states no claim, as a row of locktorture compare --exec: every
// verdict passes and the table says "no claim". A family the lock cannot
// take (clock: a client process's clock is its own; renew-partition and
// renew-delay: locks that renew) is a skipped subtest saying why. The
// built-in rows are not the test's lock: a cell of theirs that is not as
// its family expects is logged, never failed. Left out, Beside is every
// built-in row over the lock's Kinds and Families every family: for Kinds
// redis about 120 cells, some five minutes at one seed (locktorture
// compare --plan estimates it). Seeds (or LOCKTEST_SEEDS,
// -locktest.seeds) runs each family with more seeds, in as many times
// the time (go test -timeout, whose default is 10m). The
// comparison goes to Comparison.Store or LOCKTEST_STORE, else to a
// temporary directory removed after the test unless it failed or
// LOCKTEST_KEEP is set. Its clients are processes of the test binary,
// always (TestMain must call Main); each cell's servers are its own.
package locktest
