// Package all links every kind of server that has a package of its own
// under cluster/kinds: each registers itself with cluster's registry
// (cluster.RegisterKind) from its init. Import it, for its effect only,
// wherever the kinds are listed, started or checked by name (the program,
// locktest, a test of the registry); a new kind adds one line here.
//
// A program that links it can be a run's guard (its harness re-executes
// itself as one: internal/journal): once every kind is registered, with
// its undos and its clean-up, it is then nothing else.
package all

import (
	"github.com/locktorture/locktorture/internal/journal"

	// The clean-up of an external run's namespace (an undo).
	_ "github.com/locktorture/locktorture/cluster/external"

	// etcd (etcd).
	_ "github.com/locktorture/locktorture/cluster/kinds/etcd"
	// MariaDB (mariadb).
	_ "github.com/locktorture/locktorture/cluster/kinds/mariadb"
	// PostgreSQL (postgres) and PgBouncer (pgbouncer) in front of it.
	_ "github.com/locktorture/locktorture/cluster/kinds/postgres"
	// Redis (redis) with its Sentinels (sentinel).
	_ "github.com/locktorture/locktorture/cluster/kinds/redis"
	// ZooKeeper (zookeeper).
	_ "github.com/locktorture/locktorture/cluster/kinds/zookeeper"
)

func init() {
	// Every kind above, and cluster/external, is initialised before this
	// package: a guard replays a run's journal with each kind's undos and
	// clean-up, and the external run's.
	journal.RunGuardIfAsked()
}
