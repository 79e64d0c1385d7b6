package cluster_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/locktorture/locktorture/cluster"
)

// TestKindAbilities: each registered kind has the abilities it had as
// fields of Kind, or as rules outside its package (Redis's refusal of
// Valkey where there is none, PgBouncer's rules in package scenarios) (a method spelled wrong would drop one silently: a type
// assertion finds no interface), and none more.
func TestKindAbilities(t *testing.T) {
	abilities := map[string]reflect.Type{
		"Checker":         reflect.TypeFor[cluster.Checker](),
		"Preparer":        reflect.TypeFor[cluster.Preparer](),
		"Cleaner":         reflect.TypeFor[cluster.Cleaner](),
		"DSNAddressed":    reflect.TypeFor[cluster.DSNAddressed](),
		"Credentialer":    reflect.TypeFor[cluster.Credentialer](),
		"Composer":        reflect.TypeFor[cluster.Composer](),
		"TLSStarter":      reflect.TypeFor[cluster.TLSStarter](),
		"SessionEnder":    reflect.TypeFor[cluster.SessionEnder](),
		"LeaderElector":   reflect.TypeFor[cluster.LeaderElector](),
		"MembersUnlinked": reflect.TypeFor[cluster.MembersUnlinked](),
		"CompanionNamer":  reflect.TypeFor[cluster.CompanionNamer](),
		"Configurable":    reflect.TypeFor[cluster.Configurable](),
		"OlderSpelled":    reflect.TypeFor[cluster.OlderSpelled](),
		"SentinelGroup":   reflect.TypeFor[cluster.SentinelGroup](),
		"Refuser":         reflect.TypeFor[cluster.Refuser](),
		"RunChecker":      reflect.TypeFor[cluster.RunChecker](),
		"Joiner":          reflect.TypeFor[cluster.Joiner](),
	}
	want := map[string][]string{
		"etcd":      {"Checker", "Cleaner", "Composer", "Configurable", "LeaderElector", "MembersUnlinked", "OlderSpelled", "SessionEnder", "TLSStarter"},
		"mariadb":   {"Checker", "Cleaner", "Composer", "DSNAddressed", "Preparer", "SessionEnder"},
		"pgbouncer": {"Checker", "Composer", "Configurable", "DSNAddressed", "Joiner", "OlderSpelled", "RunChecker"},
		"postgres":  {"Checker", "Cleaner", "Composer", "Configurable", "Credentialer", "DSNAddressed", "OlderSpelled", "Preparer", "SessionEnder", "TLSStarter"},
		"redis":     {"Checker", "Cleaner", "CompanionNamer", "Composer", "Refuser", "SentinelGroup", "SessionEnder", "TLSStarter"},
		"zookeeper": {"Checker", "Cleaner", "Composer", "Configurable", "Credentialer", "LeaderElector", "OlderSpelled", "SessionEnder"},
	}
	for name, w := range want {
		k, ok := cluster.LookupKind(name)
		if !ok {
			t.Errorf("no kind %s registered", name)
			continue
		}
		var got []string
		for a, typ := range abilities {
			if k.Abilities != nil && reflect.TypeOf(k.Abilities).Implements(typ) {
				got = append(got, a)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, w) {
			t.Errorf("kind %s can %v, want %v", name, got, w)
		}
	}
}
