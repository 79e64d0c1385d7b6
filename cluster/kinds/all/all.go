// Package all links every kind of server that has a package of its own
// under cluster/kinds: each registers itself with cluster's registry
// (cluster.RegisterKind) from its init. Import it, for its effect only,
// wherever the kinds are listed, started or checked by name (the program,
// locktest, a test of the registry); a new kind adds one line here.
package all

import (
	// etcd (etcd).
	_ "github.com/locktorture/locktorture/cluster/kinds/etcd"
	// MariaDB (mariadb).
	_ "github.com/locktorture/locktorture/cluster/kinds/mariadb"
	// PostgreSQL (postgres) and PgBouncer (pgbouncer) in front of it.
	_ "github.com/locktorture/locktorture/cluster/kinds/postgres"
	// ZooKeeper (zookeeper).
	_ "github.com/locktorture/locktorture/cluster/kinds/zookeeper"
)
