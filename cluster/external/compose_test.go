package external

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/cluster"
	// Every kind, each linked by itself: cluster/kinds/all links this
	// package.
	_ "github.com/locktorture/locktorture/cluster/kinds/etcd"
	_ "github.com/locktorture/locktorture/cluster/kinds/mariadb"
	_ "github.com/locktorture/locktorture/cluster/kinds/postgres"
	_ "github.com/locktorture/locktorture/cluster/kinds/redis"
	_ "github.com/locktorture/locktorture/cluster/kinds/zookeeper"
)

// testProgramKind is a kind registered by this test alone, one program on
// one port: nothing was written for it to be served in the standing
// cluster.
const testProgramKind = "test-program"

func init() {
	cluster.RegisterKind(cluster.Kind{
		Name: testProgramKind, Packages: []string{"redis-server"}, Image: "redis:7.4",
		Program: &cluster.ProgramSpec{
			Program: "redis-server", Package: "redis-server", Port: 6379,
			Args: func(host string, port int, dir string) []string {
				return []string{"--bind", host, "--port", "0"}
			},
		},
	})
}

// TestComposeServesEveryKind: the standing cluster has services for every
// registered kind that says how it runs there or is one program (this
// package's test kind included: nothing was written for it), its servers
// file parses and names each of them, images given replace the defaults,
// a service whose image is no official one is in a profile of its own,
// and docker-compose's "$" is escaped.
func TestComposeServesEveryKind(t *testing.T) {
	compose, servers, err := ComposeFiles(map[string]string{"all": "locktorture-servers:bookworm"})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version  string                    `yaml:"version"`
		Services map[string]map[string]any `yaml:"services"`
	}
	if err := yaml.Unmarshal([]byte(compose), &doc); err != nil {
		t.Fatalf("docker-compose.yml does not parse: %v\n%s", err, compose)
	}
	path := filepath.Join(t.TempDir(), "compose.servers.yaml")
	if err := os.WriteFile(path, []byte(servers), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := cluster.LoadServersFile(path)
	if err != nil {
		t.Fatalf("compose.servers.yaml does not parse: %v\n%s", err, servers)
	}
	tests := []struct {
		kind    string
		service string
		entries int
	}{
		{"redis", "redis-0", 5},
		{testProgramKind, testProgramKind + "-0", 1},
		{"postgres", "postgres", 1},
		{"etcd", "etcd-2", 3},
		{"zookeeper", "zookeeper", 1},
		{"pgbouncer", "pgbouncer", 1},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			s, ok := doc.Services[tt.service]
			if !ok {
				t.Fatalf("no service %s in docker-compose.yml", tt.service)
			}
			want := "${" + composeImageVar(tt.kind) + ":-locktorture-servers:bookworm}"
			if s["image"] != want {
				t.Errorf("image %v, want %s", s["image"], want)
			}
			if s["container_name"] != cluster.ComposeContainer(tt.service) {
				t.Errorf("container %v", s["container_name"])
			}
			if got := len(f.Servers[tt.kind]); got != tt.entries {
				t.Errorf("%d %s servers in compose.servers.yaml, want %d", got, tt.kind, tt.entries)
			}
			for _, e := range f.Servers[tt.kind] {
				if e.Control != "docker" || doc.Services[strings.TrimPrefix(e.Container, "locktorture-")] == nil {
					t.Errorf("%s names container %q, not one of a service", e.Addr, e.Container)
				}
			}
		})
	}
	if f.Sentinel == nil || len(f.Sentinel.Addrs) != 3 || len(f.Sentinel.Servers) != 2 {
		t.Errorf("sentinel group: %+v", f.Sentinel)
	}
	if got := doc.Services["pgbouncer"]["profiles"]; len(got.([]any)) != 1 || got.([]any)[0] != "pgbouncer" {
		t.Errorf("pgbouncer's profiles: %v, want [pgbouncer] (no official image has it)", got)
	}
	if !strings.Contains(compose, "$$(ls -d /usr/lib/postgresql") {
		t.Error("a script's $ is not escaped for docker-compose")
	}
}
