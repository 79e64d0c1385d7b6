package locktest

import (
	"os"
	"reflect"
	"testing"

	"github.com/locktorture/locktorture/cluster"
)

// TestServersFile: the shared servers' file names each kind as the
// registry says a servers file takes it — a DSN kind by its one string,
// any other by its addresses — and a password only by reference (an
// environment variable this process sets).
func TestServersFile(t *testing.T) {
	g := cluster.ServerSet{
		Servers: map[string][]string{
			"redis":     {"127.0.0.1:1"},
			"etcd":      {"127.0.0.1:2", "127.0.0.1:3"},
			"zookeeper": {"127.0.0.1:4"},
			"postgres":  {"postgres://lt@127.0.0.1:5/db"},
		},
		Auth: cluster.AuthSet{"redis": {{Username: "lt", Password: "pw"}}},
	}
	doc, err := serversFile(g)
	if err != nil {
		t.Fatal(err)
	}
	var ref map[string]string
	if l, ok := doc["redis"].([]any); ok && len(l) == 1 {
		ref, _ = l[0].(map[string]string)
	}
	if ref["addr"] != "127.0.0.1:1" || ref["username"] != "lt" || os.Getenv(ref["password_env"]) != "pw" {
		t.Errorf("redis: %v, want its address, user and a password_env holding its password", doc["redis"])
	}
	delete(doc, "redis")
	want := map[string]any{
		"etcd":      []any{"127.0.0.1:2", "127.0.0.1:3"},
		"zookeeper": []any{"127.0.0.1:4"},
		"postgres":  "postgres://lt@127.0.0.1:5/db",
	}
	if !reflect.DeepEqual(doc, want) {
		t.Errorf("servers file %v, want %v", doc, want)
	}
}
