package cluster_test

// The kinds that are packages of their own register with this package's
// registry in its tests too, so that a test of every kind (compose,
// servers files, server names) sees them: they are linked here, outside
// package cluster, as they import it.
import _ "github.com/locktorture/locktorture/cluster/kinds/all"
