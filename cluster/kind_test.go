package cluster

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

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

// TestKindIsACore: Kind holds only what every kind has (its name, its
// packages, its image, its startup cost, how it starts) and the value
// whose interfaces say what else it can do. A hook one kind alone needs
// (Redis's Sentinel checks, a pooler's rules) is an ability interface in
// abilities.go that the kind's Abilities value implements, not a field
// here that every other kind leaves nil.
func TestKindIsACore(t *testing.T) {
	allowed := []string{"Name", "Packages", "OptionalPackages", "Image", "StartupCost", "Start", "Program", "Abilities"}
	typ := reflect.TypeOf(Kind{})
	for i := range typ.NumField() {
		if f := typ.Field(i); !slices.Contains(allowed, f.Name) {
			t.Errorf("cluster.Kind has a field %s beyond its core (%s): say what a kind can do beyond starting its servers by an interface its Abilities value implements (abilities.go: Checker, Preparer, SentinelGroup, ...), asked with a type assertion",
				f.Name, strings.Join(allowed, ", "))
		}
	}
}
