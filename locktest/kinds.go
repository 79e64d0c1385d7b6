package locktest

import (
	"github.com/locktorture/locktorture/cluster/kinds/etcd"
	"github.com/locktorture/locktorture/cluster/kinds/mariadb"
	"github.com/locktorture/locktorture/cluster/kinds/postgres"
	"github.com/locktorture/locktorture/cluster/kinds/redis"
	"github.com/locktorture/locktorture/cluster/kinds/zookeeper"
)

// The kinds of server a Suite's Kinds name, Config.Auth is keyed by and
// Config.Credentials takes; each is the kind's own name, as a servers file
// (LOCKTEST_SERVERS) and `--image KIND=REF` spell it.
const (
	// KindRedis is one redis-server (the default kind).
	KindRedis = redis.Kind
	// KindSentinel names the Sentinels of a Redis Sentinel group
	// (credentials only: the group belongs to KindRedis).
	KindSentinel = redis.SentinelKind
	// KindPostgres is one PostgreSQL server (its credentials are in its
	// connection string).
	KindPostgres = postgres.Kind
	// KindEtcd is one etcd server.
	KindEtcd = etcd.Kind
	// KindZooKeeper is one ZooKeeper server.
	KindZooKeeper = zookeeper.Kind
	// KindMariaDB is one MariaDB server.
	KindMariaDB = mariadb.Kind
)
