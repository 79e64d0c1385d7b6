package nemesis

import (
	"testing"

	// Every kind of server, registered with cluster's registry.
	_ "github.com/locktorture/locktorture/cluster/kinds/all"
)

// TestKindsFromRegistry: the kinds a fault applies to come from the kind
// registry — kill-session to every kind whose servers end sessions, a
// server fault's `leader` to the kinds whose ensemble elects one — as the
// lists these faults wrote out before said.
func TestKindsFromRegistry(t *testing.T) {
	for _, c := range []struct {
		kinds           []string
		sessions, leads bool
	}{
		{[]string{"postgres"}, true, false},
		{[]string{"postgres", "pgbouncer"}, true, false},
		{[]string{"mariadb"}, true, false},
		{[]string{"redis"}, true, false},
		{[]string{"etcd"}, true, true},
		{[]string{"zookeeper"}, true, true},
		{[]string{"pgbouncer"}, false, false},
		{[]string{"no-such-kind"}, false, false},
		{nil, false, false},
	} {
		s := Shape{Backend: "b", Clients: 2, Kinds: c.kinds}
		if err := Applies("kill-session", s); (err == nil) != c.sessions {
			t.Errorf("kill-session on %v: %v, want applies %v", c.kinds, err, c.sessions)
		}
		p := &ServerParams{ServerSet: ServerSet{Servers: []string{leaderTarget}}}
		if err := p.Validate(s); (err == nil) != c.leads {
			t.Errorf("servers [leader] on %v: %v, want valid %v", c.kinds, err, c.leads)
		}
	}
}
