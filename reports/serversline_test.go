package reports

import (
	"testing"

	"github.com/locktorture/locktorture/checker"
)

// TestServersLine: the servers' versions are told by kind, the kind a
// server's name says (the registry's: a Sentinel's is redis's), one
// version once, with the kind's image.
func TestServersLine(t *testing.T) {
	for _, c := range []struct {
		name string
		src  *checker.ServerSource
		want string
	}{
		{"none", nil, ""},
		{"mode only", &checker.ServerSource{Mode: "local"}, "local"},
		{"by kind", &checker.ServerSource{Mode: "docker",
			Versions: map[string]string{"redis-0": "7.0.15", "sentinel-0": "7.0.15", "etcd-1": "3.5.17", "etcd-2": "3.5.17", "postgres": "15.18"},
			Images:   map[string]string{"redis": "redis:7.4", "zookeeper": "zookeeper:3.9"}},
			"docker: etcd 3.5.17; postgres 15.18; redis 7.0.15 (redis:7.4); zookeeper (zookeeper:3.9)"},
		{"a name of no kind", &checker.ServerSource{Mode: "external", Versions: map[string]string{"mystery-0": "1.0"}},
			"external: mystery 1.0"},
	} {
		if got := serversLine(c.src); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
