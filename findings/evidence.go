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

// evidence is each finding's, by id (a test checks every finding has one).
var evidence = map[string]Evidence{
	"etcd-22082": {
		Class:   Defect,
		Words:   "Mutex implements the sync Locker interface with etcd",
		Source:  "https://pkg.go.dev/go.etcd.io/etcd/client/v3@v3.5.35/concurrency#Mutex",
		Reports: []string{"https://github.com/etcd-io/etcd/issues/22082", "https://github.com/etcd-io/etcd/pull/22115"},
	},
	"redlock-clock-jump": {
		Class:   Limitation,
		Words:   "Mutual exclusion. At any given moment, only one client can hold a lock.",
		Source:  "https://redis.io/docs/latest/develop/use/patterns/distributed-locks/",
		Reports: []string{"https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html"},
	},
	"redlock-restart": {
		Class:   Limitation,
		Words:   "delayed restarts",
		Source:  "https://redis.io/docs/latest/develop/use/patterns/distributed-locks/",
		Reports: []string{"https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html"},
	},
	"sentinel-failover": {
		Class:  Limitation,
		Words:  "there is a race condition with this model",
		Source: "https://redis.io/docs/latest/develop/use/patterns/distributed-locks/",
	},
	"pgbouncer-advisory": {
		Class:   Limitation,
		Words:   "Session-level advisory locks",
		Source:  "https://www.pgbouncer.org/features.html",
		Reports: []string{"https://github.com/pgbouncer/pgbouncer/issues/617", "https://github.com/pgbouncer/pgbouncer/issues/102"},
	},
	"redis-fenced-failover": {
		Class:  Limitation,
		Words:  "there is a race condition with this model",
		Source: "https://redis.io/docs/latest/develop/use/patterns/distributed-locks/",
	},
	"rueidislock-renew-partition": {
		Class:  Defect,
		Words:  "The returned ctx will be canceled automatically and immediately once the KeyMajority is not held anymore",
		Source: "https://github.com/redis/rueidis/blob/v1.0.79/rueidislock/README.md",
	},
	"rueidislock-renew-delay": {
		Class:  Defect,
		Words:  "The returned ctx will be canceled automatically and immediately once the KeyMajority is not held anymore",
		Source: "https://github.com/redis/rueidis/blob/v1.0.79/rueidislock/README.md",
	},
	"rueidislock-failover": {
		Class:   Defect,
		Words:   "The returned ctx will be canceled automatically and immediately once the KeyMajority is not held anymore, for example: Redis are down.",
		Source:  "https://github.com/redis/rueidis/blob/v1.0.79/rueidislock/README.md",
		Reports: []string{"https://github.com/redis/rueidis/issues/925", "https://github.com/redis/rueidis/pull/926"},
	},
	"zk-lock-renew-partition": {
		Class:   Gap,
		Words:   "Lock is a mutual exclusion lock.",
		Source:  "https://pkg.go.dev/github.com/go-zookeeper/zk@v1.0.4#Lock",
		Reports: []string{"https://github.com/samuel/go-zookeeper/issues/20", "https://github.com/docker/libkv/pull/156"},
	},
	"zk-lock-kill-session": {
		Class:   Gap,
		Words:   "Lock is a mutual exclusion lock.",
		Source:  "https://pkg.go.dev/github.com/go-zookeeper/zk@v1.0.4#Lock",
		Reports: []string{"https://github.com/samuel/go-zookeeper/issues/20", "https://github.com/docker/libkv/pull/156"},
	},
	"curator-kill-session": {
		Class:   Defect,
		Words:   "Fully distributed locks that are globally synchronous, meaning at any snapshot in time no two clients think they hold the same lock.",
		Source:  "https://github.com/apache/curator/blob/apache-curator-5.4.0/curator-recipes/src/site/confluence/shared-reentrant-lock.confluence",
		Reports: []string{"https://github.com/apache/curator/issues/1121"},
	},
	"tooz-redis-renew-delay": {
		Class:  Limitation,
		Words:  "less resilient",
		Source: "https://docs.openstack.org/tooz/latest/user/drivers.html",
		Tuned:  "tooz runs with timeout=2 (the redis driver's default is 30)",
	},
}

// Evidence is the finding's class and the upstream words that decide it.
func (f Finding) Evidence() Evidence { return evidence[f.ID] }

// Class is the finding's class.
func (f Finding) Class() Class { return evidence[f.ID].Class }
