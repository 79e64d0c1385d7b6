package findings

// Class is what kind of finding one is, decided by upstream's own words
// (Evidence.Words): what the library's documentation promises or warns.
type Class string

// The classes of a finding.
const (
	// Defect: the library's own docs promise the opposite of what the
	// runs show.
	Defect Class = "defect"
	// Limitation: the library's or its server's docs warn of it; the runs
	// show the warning come true, and how fast.
	Limitation Class = "limitation"
	// Gap: the API gives the holder no way to know, and the docs say
	// nothing of it.
	Gap Class = "gap"
)

// Evidence holds a finding to upstream's words: its class, the words that
// decide it, quoted exactly, with where they are at the version tested;
// the known upstream reports (or what was searched when none was found);
// and what the finding's set-up tunes, with what happens untuned.
type Evidence struct {
	Class Class
	// Words are upstream's words that decide the class, quoted exactly
	// (a promise for a defect, a warning for a limitation, the whole of
	// what the docs say for a gap).
	Words string
	// Source links where Words are, at the version tested.
	Source string
	// Reports link the known upstream reports (issues, pull requests,
	// design notes), most relevant first.
	Reports []string
	// Searched says what was searched, when Reports is empty.
	Searched string
	// Tuned says what the finding's set-up tunes away from the library's
	// defaults or from production, and what happens untuned ("" when
	// nothing is).
	Tuned string
}

// The upstream pages the evidence quotes, at the versions tested.
const (
	// redisLocks is redis.io's "Distributed Locks with Redis" as it stood
	// from January 2023 to June 2025 (redis-server 7.0.15 is of January
	// 2024), in redis-doc, then redis.io's source; redis.io has the same
	// text today under /docs/latest/develop/clients/patterns/distributed-locks/.
	redisLocks = "https://github.com/redis/redis-doc/blob/0bc34278efa31a5941125fa1489a1a80b2b0a7a7/docs/manual/patterns/distributed-locks.md"
	// redisSentinel is Redis Sentinel's page at the same commit.
	redisSentinel = "https://github.com/redis/redis-doc/blob/0bc34278efa31a5941125fa1489a1a80b2b0a7a7/docs/management/sentinel.md"
	// rueidislockReadme is rueidislock's README at v1.0.79.
	rueidislockReadme = "https://github.com/redis/rueidis/blob/v1.0.79/rueidislock/README.md#features-backed-by-the-redis-client-side-caching"
	// zkLock is go-zookeeper's Lock at v1.0.4.
	zkLock = "https://pkg.go.dev/github.com/go-zookeeper/zk@v1.0.4#Lock"
	// rueidislockSearched is what was searched for a report of
	// rueidislock's context cancelled late.
	rueidislockSearched = "the issues corpus (redis/rueidis issues and pull requests) for rueidislock's context cancelled after its keys expired — a partition, slow replies: nothing. Nearby: redis/rueidis#924 (merged: monitored keys' expiry kept a KeyValidity ahead of now) and #669 (merged: a shorter deadline in the caller's context respected)"
)

// zkLockReports are the known reports of a ZooKeeper lock that never
// hears its session ended.
var zkLockReports = []string{
	"https://github.com/samuel/go-zookeeper/issues/20 — open since 2014 on the original: \"Is there a way to tell if a previously acquired lock has been lost?\"",
	"https://github.com/samuel/go-zookeeper/pull/190 — closed unmerged: a Done() channel for a lock lost",
	"https://github.com/docker/libkv/pull/156 — open: libkv's own ZooKeeper lock notified on session close; before it, \"the clients would continue execution while believing (wrongfully) that they still hold the lock\"",
	"https://issues.apache.org/jira/browse/ZOOKEEPER-688 — ZooKeeper: a client hears that its session expired only once it reconnects, as ZooKeeper's Programmer's Guide says (its JIRA not reached from here)",
}

// evidence is each finding's, by id (a test checks every finding has one,
// and that docs/findings.md quotes its Words and names its class).
var evidence = map[string]Evidence{
	// Defects: the library's own documentation promises the opposite.
	"etcd-22082": {
		Class:  Defect,
		Words:  "Mutex implements the sync Locker interface with etcd",
		Source: "https://pkg.go.dev/go.etcd.io/etcd/client/v3@v3.5.35/concurrency#Mutex",
		Reports: []string{
			"https://github.com/etcd-io/etcd/issues/22082 — open; @lavacat on it: \"good catch, this is legit issue\"",
			"https://github.com/etcd-io/etcd/pull/22115 — open: Unlock's delete guarded by the key's create revision (Mutex.IsOwner)",
		},
		Tuned: "The application retries an Unlock whose reply was lost every 1s in the background (release_retry: 1s) while it takes the lock again with the same session — what careful code does; the lost reply is injected once. Without the retry nothing goes wrong: the lost-reply family is valid for etcd-concurrency. The session's TTL (4s here, the library's default 60s) plays no part: the retry deletes the newer key by name whenever it runs.",
	},
	"rueidislock-renew-partition": {
		Class:    Defect,
		Words:    "The returned `ctx` will be canceled automatically and immediately once the `KeyMajority` is not held anymore, for example: Redis are down. Acquired keys have been deleted by other programs or administrators.",
		Source:   rueidislockReadme,
		Searched: rueidislockSearched,
		Tuned:    "KeyValidity 2s (the scenario's lease; the library's default is 5s), ExtendInterval its default, half of it; the cut lasts 3s. By the library's code the stale window is one ExtendInterval whatever the validity — the extension sent at V/2 waits until its deadline, V/2 + V, while the keys expire at V — so 2.5s at the defaults; not yet measured.",
	},
	"rueidislock-renew-delay": {
		Class:    Defect,
		Words:    "The returned `ctx` will be canceled automatically and immediately once the `KeyMajority` is not held anymore, for example: Redis are down. Acquired keys have been deleted by other programs or administrators.",
		Source:   rueidislockReadme,
		Searched: rueidislockSearched,
		Tuned:    "KeyValidity 2s (the library's default is 5s), replies held 1.5s. Each run's Redis is fresh, so the first extension's EVALSHA is answered NOSCRIPT and rueidis sends EVAL after it: the extension is applied only after a delayed round trip, at 2.5s, when the keys expired at 2.0s. With the script cached on the server (any earlier extension by any client), its standalone reproducer (findings/reproducers/rueidislock-renew-delay, redis-server 7.0.15) did not reproduce in 10 of 11 runs — the context ended at ~3.0s, when the keys expired — and one run had a 10ms window; with the script flushed, 6 of 6 reproduced (~1.0s of two holders). So the finding, as run, is the first extension after the script left the cache (a fresh or restarted server, SCRIPT FLUSH).",
	},
	"rueidislock-failover": {
		Class:  Defect,
		Words:  "The returned `ctx` will be canceled automatically and immediately once the `KeyMajority` is not held anymore, for example: Redis are down. Acquired keys have been deleted by other programs or administrators.",
		Source: rueidislockReadme,
		Reports: []string{
			"https://github.com/redis/rueidis/issues/925 — closed: rueidislock's scripts asked to be retryable",
			"https://github.com/redis/rueidis/pull/926 — merged: every rueidislock script retryable (NewLuaScriptRetryable): the extension is retried against a dead primary until the key's deadline, the finding's mechanism",
		},
		Tuned: "Its own scenario file cuts client 0 from the promoted replica (it still reaches the Sentinels, and the dead primary refuses it), so no retry can reach a primary; KeyValidity 20s. Untuned — the failover family's cell, no cut — the context ends at the first retry that reaches the promoted replica, a race with client 1's grant there: invalid in 6 of 6 cells of the compare of 2026-11-28 (0.32–0.36s of double grant) and 4 of 6 runs before.",
	},
	"rueidislock-restart": {
		Class:  Defect,
		Words:  "The returned `ctx` will be canceled automatically and immediately once the `KeyMajority` is not held anymore, for example: Redis are down. Acquired keys have been deleted by other programs or administrators.",
		Source: rueidislockReadme,
		Reports: []string{
			"https://github.com/redis/rueidis/pull/926 — merged: every rueidislock script retryable (NewLuaScriptRetryable), so the extension is retried with backoff against a Redis that refuses it; the mechanism of rueidislock-failover and of this finding (bisected: first at v1.0.70, the release with #926)",
			"https://github.com/redis/rueidis/issues/925 — closed: rueidislock's scripts asked to be retryable",
		},
		Searched: "the issues corpus (redis/rueidis issues and pull requests) for rueidislock's context after a Redis restart or a lost key: nothing on it",
		Tuned:    "Its own scenario file loses every reply to client 0 from its grant for 4s (lost-reply: each of its connections closed at the first reply), so to client 0 its Redis stays down and no retry can reach the restarted server; KeyValidity 20s. Untuned — the restart family's cell, client 1 first asking at 400ms — the context ends at client 0's first retry wake after the restart, a race with client 1's grant, lost only when the server took longer than about 350ms to come back (a loaded machine): on rueidislock-1, seeds 1–20, invalid in 6 of 20 (load average ~26 from other work) and 12 of 20 (two busy loops beside it, load ~27–43); on rueidislock (three keys), seeds 1–10, 6 of 10 (2026-11-29). Every run whose server was back within 300ms was valid: client 0's next retry, still a short backoff, came before client 1's first request. Without locktorture (findings/reproducers/rueidislock-restart with -down 0: nothing holds client 0 off; load ~40): 4 of 10 runs had client 1 granted on the restarted server 8–55ms before client 0's context ended, and with the server kept down 300ms longer (a test program of the same shape) 318ms before.",
	},
	"curator-kill-session": {
		Class:  Defect,
		Words:  "Fully distributed locks that are globally synchronous, meaning at any snapshot in time no two clients think they hold the same lock.",
		Source: "https://github.com/apache/curator/blob/apache-curator-5.4.0/curator-recipes/src/site/confluence/shared-reentrant-lock.confluence",
		Reports: []string{
			"https://github.com/apache/curator/issues/1121 — CURATOR-604, open: two holders after a session expiry and reconnect (another race; the same outcome)",
		},
		Searched: "the issues corpus (apache/curator's issues imported from JIRA, apache/zookeeper's pull requests) for the Disconnected event delayed by ClientCnxnSocketNIO.cleanup()'s 100ms sleep, and for a double grant from it: nothing. Nearby: CURATOR-206 (apache/curator#727, closed: a partition past the session timeout); Netflix/curator#9 (2011: \"is the listener notified immediately upon a disconnect, or is there a delay?\")",
		Tuned:    "The holder's session is ended by re-attaching to it with its id and password from a second connection and closing it (ZooKeeper has no command that ends another client's session); client 1 already waits in acquire (wait_ms 1400). In production a session ends this way only when another process attaches with the holder's id and password (a process resuming a saved session, a tool). An ordinary expiry — a partition past the session timeout — is heard first: Curator's SUSPENDED comes at 2/3 of the session timeout, and the renew-partition cell is valid (the lost at 1.51s, client 1's grant at 2.13s, the compare of 2026-11-28). Other server-side ends of a connected session are not yet measured.",
	},
	"tooz-zookeeper-kill-session": {
		Class:    Defect,
		Words:    "This is a exclusive lock, a second call to acquire() will block or return False.",
		Source:   "https://opendev.org/openstack/tooz/src/tag/3.1.0/tooz/coordination.py",
		Searched: "the issues corpus (python-zk/kazoo, and tooz wherever it appears; tooz's tracker, Launchpad, is not reachable from here) for a tooz or kazoo lock still held after its session expired or was closed: nothing on tooz. Nearby: python-zk/kazoo#2 (closed, 2012: \"what will happen if session disconnects while I'm holding a kazoo.recipe.lock.Lock\"), python-zk/kazoo#565 (open: how to act on the LOST state kazoo's Lock docs ask for), docker/libkv#156 (open: the same silence in libkv's ZooKeeper lock)",
		Tuned:    "The holder's session is ended by re-attaching to it with its id and password and closing it, as for zk-lock-kill-session and curator-kill-session (ZooKeeper has no command that ends another client's session): in production, only when another process attaches with the holder's session id and password; how rare that is, is not measured. An ordinary expiry shows the same silence: renew-partition on tooz-zookeeper (client 0 cut from ZooKeeper past its 2s session, seed 1, 2026-11-29) was invalid — client 1 granted at 2.08s, client 0 held on to 4.02s, 1.95s of overlap, no lost event, one increment lost; that family's expectation of tooz-zookeeper is invalid (\"tooz tells nobody\", docs/compare.md), so the cell is not this finding's.",
	},
	// Limitations: the library's or its server's documentation warns of it.
	"redlock-clock-jump": {
		Class:  Limitation,
		Words:  "That means that a wall-clock shift may result in a lock being acquired by more than one process.",
		Source: redisLocks + "#disclaimer-about-consistency",
		Reports: []string{
			"https://github.com/redis/redis-doc/pull/2106 — merged 2022: the page's \"Disclaimer about consistency\"",
			"https://github.com/redis/redis/pull/7644 — Redis's TTLs and the monotonic clock, the discussion the disclaimer cites",
			"https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html — Kleppmann's analysis of Redlock (2016); antirez's answer: http://antirez.com/news/101",
		},
		Tuned: "C's clock is moved 12s forward for 100ms on client 0's grant, past the 10s TTL, and partitions leave each client only its own majority: the story by construction. The page's condition is any wall-clock shift of a majority server past a key's remaining life; how often clocks step that far in production is not measured here.",
	},
	"redlock-restart": {
		Class:  Limitation,
		Words:  "One of the instances where the client was able to acquire the lock is restarted, at this point there are again 3 instances that we can lock for the same resource, and another client can lock it again, violating the safety property of exclusivity of lock.",
		Source: redisLocks + "#performance-crash-recovery-and-fsync",
		Reports: []string{
			"https://github.com/go-redsync/redsync/pull/147 — closed: a restarted in-memory Redis leaves the lock on fewer servers (redsync's restarts, liveness)",
			"https://github.com/go-redsync/redsync/pull/149 — merged: WithSetNXOnExtend, \"Useful if your redises restart often and you want to reduce the chances of losing the lock\"",
			"https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html — Kleppmann's analysis of Redlock (2016)",
		},
		Tuned: "C is killed and restarted at once, without persistence, on client 0's grant; partitions as in redlock-clock-jump. The page's remedy, a restart delayed past the TTL (\"delayed restarts\"), is the built-in redlock-restart-delayed, expected valid.",
	},
	"sentinel-failover": {
		Class:    Limitation,
		Words:    "This is unfortunately not viable. By doing so we can’t implement our safety property of mutual exclusion, because Redis replication is asynchronous.",
		Source:   redisLocks + "#why-failover-based-implementations-are-not-enough",
		Searched: "not searched as a bug: Redis documents it, on the locks page and on Sentinel's (\"Sentinel + Redis distributed system does not guarantee that acknowledged writes are retained during failures\")",
		Tuned:    "Replication to the replica is cut, so it never gets the lock's key, and a Sentinel is told to fail over at once (SENTINEL FAILOVER). Left to themselves the Sentinels promote it within about 4s (9s after a split vote), with the same outcome (docs/compare.md, failover). Without the cut the lock is lost only when the primary dies within the replication lag of the lock's write: how often is not measured.",
	},
	"redis-fenced-failover": {
		Class:  Limitation,
		Words:  "Sentinel + Redis distributed system does not guarantee that acknowledged writes are retained during failures, since Redis uses asynchronous replication.",
		Source: redisSentinel + "#fundamental-things-to-know-about-sentinel-before-deploying",
		Reports: []string{
			"https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html — Kleppmann: \"Simply keeping a counter on one Redis node would not be sufficient, because that node may fail.\"",
		},
		Searched: "nothing to file upstream: redis-fenced is this project's own backend",
		Tuned:    "As sentinel-failover: replication cut, a forced failover; --fencing writes.",
	},
	"pgbouncer-advisory": {
		Class:  Limitation,
		Words:  "This mode breaks a few session-based features of PostgreSQL. You can use it only when the application cooperates by not using features that break.",
		Source: "https://github.com/pgbouncer/pgbouncer.github.io/blob/b57fa0b9e0068bbfdb6e72f10615652b36f5671c/features.md",
		Reports: []string{
			"https://github.com/pgbouncer/pgbouncer/issues/617 — closed: the features page listed no advisory locks; the row \"Session-level advisory locks\" (transaction pooling: \"Never\") was added in July 2021",
			"https://github.com/pgbouncer/pgbouncer/issues/102 — closed: \"Need reset_query in transaction mode with pg_advisory_lock\"",
		},
		Tuned: "No fault; 4 clients on one key over 2 server connections (pool_size 2; PgBouncer's default_pool_size is 20). With more server connections an unlock lands on another connection as before, and a try lands on the holding one less often: not yet measured.",
	},
	"tooz-redis-renew-delay": {
		Class:    Limitation,
		Words:    "Primitives are often based on TTL(s) that may expire before being renewed.",
		Source:   "https://opendev.org/openstack/tooz/src/tag/3.1.0/doc/source/user/drivers.rst",
		Searched: "the issues corpus for tooz's redis lock expiring under its heartbeat, or a failed reacquire never reaching the holder: nothing; tooz's tracker (Launchpad, python-tooz) is not reachable from here",
		Tuned:    "The driver runs with timeout=2 and lock_timeout=2 (both default to 30s), replies held 1.5s. By tooz's and redis-py's code (not measured): a beat is the member key's PSETEX and then each lock's reacquire, each waiting for its reply, and the next beat waits half of what is left of the timeout; so, with the reacquire's script cached on the server, the key outlives the beats only while replies take under half its TTL — 15s at the default 30s. A first reacquire on a fresh server may cost two more round trips (NOSCRIPT, SCRIPT LOAD), which would lower that. Not yet measured at the default.",
	},
	// Gaps: the API gives the holder no way to know, and the docs say
	// nothing of it.
	"zk-lock-renew-partition": {
		Class:   Gap,
		Words:   "Lock is a mutual exclusion lock.",
		Source:  zkLock,
		Reports: zkLockReports,
		Tuned:   "A 2s session timeout (the lease) and a 3s cut: an ordinary session expiry; nothing else is tuned.",
	},
	"zk-lock-kill-session": {
		Class:   Gap,
		Words:   "Lock is a mutual exclusion lock.",
		Source:  zkLock,
		Reports: zkLockReports,
		Tuned:   "The holder's session is ended by re-attaching to it with its id and password and closing it (ZooKeeper has no command that ends another client's session): in production, only when another process attaches with the holder's session id and password — ZooKeeper's Programmer's Guide names the case, \"two clients try to reestablish the same connection using a saved session id and password\"; how rare it is, is not measured. An ordinary expiry — a partition or a pause past the session timeout — leaves zk.Lock as silent: that is zk-lock-renew-partition, measured there.",
	},
}

// Evidence is the finding's class and the upstream words that decide it.
func (f Finding) Evidence() Evidence { return evidence[f.ID] }

// Class is the finding's class.
func (f Finding) Class() Class { return evidence[f.ID].Class }
