package cluster

import "testing"

// TestServerKind: a server's name says its kind, a companion's (a
// Sentinel) its kind's; a name of no registered kind says none (a kind
// whose name holds a '-': redis's TestAKindIsOneFile).
func TestServerKind(t *testing.T) {
	want := map[string]string{ // a server's name: its kind
		"redis-0": "redis", "redis": "redis", "sentinel-2": "redis",
		"postgres": "postgres", "pgbouncer": "pgbouncer",
		"etcd-1": "etcd", "etcd1": "etcd", "zookeeper-0": "zookeeper",
		"redisish": "", "mystery-0": "", "": "",
	}
	for name, kind := range want {
		got, ok := ServerKind(name)
		if got != kind || ok != (kind != "") {
			t.Errorf("ServerKind(%q) = %q, %v; want %q", name, got, ok, kind)
		}
	}
}
