package scenarios

import (
	"strings"
	"testing"
	"time"
)

// TestUnjudged: an override that changes what a scenario's expectation is
// about (the lock, the resource, its fencing, the faults, the lease) leaves
// the expectation unjudged; one a matrix's cells also make does not.
func TestUnjudged(t *testing.T) {
	str := func(s string) *string { return &s }
	dur := func(d time.Duration) *time.Duration { return &d }
	n := func(i int) *int { return &i }
	cases := []struct {
		scenario string
		o        Overrides
		want     string // in the reason; "" for judged
	}{
		{"kleppmann-fenced", Overrides{Fencing: str("none")}, "--fencing none"},
		{"kleppmann-fenced", Overrides{Fencing: str("all")}, ""},
		{"kleppmann-fenced", Overrides{Backend: str("redis-token")}, "--backend redis-token"},
		{"kleppmann-fenced", Overrides{Backend: str("redis-fenced"), Seed: new(int64)}, ""},
		{"kleppmann-pause", Overrides{Exec: str("/usr/bin/python3 clients/python/redis_py_lock.py")}, "--exec"},
		{"kleppmann-pause", Overrides{TTL: dur(10 * time.Second)}, "--ttl 10s"},
		{"kleppmann-pause", Overrides{Nemesis: str("partition")}, "--nemesis partition"},
		{"kleppmann-pause", Overrides{Duration: dur(time.Second), Clients: n(3), Keys: n(2), ClientMode: str("process")}, ""},
		{"baseline", Overrides{Backend: str("etcd")}, ""},
		{"baseline", Overrides{Exec: str("/usr/bin/python3 clients/python/redis_py_try_lock.py")}, ""},
	}
	for _, c := range cases {
		before, err := Builtin(c.scenario)
		if err != nil {
			t.Fatal(err)
		}
		after := *before
		if err := after.Apply(c.o); err != nil {
			t.Fatalf("%s: %v", c.scenario, err)
		}
		got := c.o.Unjudged(before, &after)
		if (got == "") != (c.want == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s %+v: unjudged %q, want %q", c.scenario, c.o, got, c.want)
		}
	}
}
