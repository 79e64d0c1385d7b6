package matrix

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/scenarios"
)

func TestVersionsFromImages(t *testing.T) {
	for _, tc := range []struct {
		name   string
		images map[string][]string
		want   []string // set names
		redis  []string // each set's redis image
		err    string
	}{
		{"one kind, three tags", map[string][]string{"all": {"lt:bullseye", "lt:bookworm", "lt:trixie"}},
			[]string{"bullseye", "bookworm", "trixie"}, []string{"", "", ""}, ""},
		{"a kind with one image goes to every set", map[string][]string{"all": {"lt:bookworm"}, "redis": {"redis:6.0", "redis:7.0"}},
			[]string{"all=lt:bookworm,redis=redis:6.0", "all=lt:bookworm,redis=redis:7.0"}, []string{"redis:6.0", "redis:7.0"}, ""},
		{"same tag, two repositories", map[string][]string{"redis": {"a:7", "b:7"}},
			[]string{"7", "redis=b:7"}, []string{"a:7", "b:7"}, ""},
		{"counts differ", map[string][]string{"redis": {"a:1", "a:2"}, "etcd": {"b:1", "b:2", "b:3"}}, nil, nil, "as many as the others"},
		{"a registry port is not a tag", map[string][]string{"redis": {"host:5000/redis"}}, []string{"host:5000/redis"}, []string{"host:5000/redis"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs, err := VersionsFromImages(tc.images)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for i, v := range vs {
				names = append(names, v.Name)
				if v.Images["redis"] != tc.redis[i] {
					t.Errorf("set %s: redis image %q, want %q", v.Name, v.Images["redis"], tc.redis[i])
				}
			}
			if !slices.Equal(names, tc.want) {
				t.Errorf("names %q, want %q", names, tc.want)
			}
		})
	}
}

func TestReadVersions(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	vs, err := ReadVersions(write("ok.yaml", "versions:\n  - {name: old, images: {all: lt:bullseye}}\n  - {name: valkey, images: {redis: lt:trixie}, redis_program: valkey}\n"))
	if err != nil || len(vs) != 2 || vs[1].RedisProgram != "valkey" || vs[0].Images["all"] != "lt:bullseye" {
		t.Fatalf("ReadVersions = %+v, %v", vs, err)
	}
	if got := strings.Join(vs[1].args(), " "); got != "--image redis=lt:trixie --redis-program valkey" {
		t.Errorf("Args = %q", got)
	}
	for body, want := range map[string]string{
		"versions: []\n": "no version sets",
		"versions:\n  - {name: a}\n  - {name: a}\n":                     "named twice",
		"versions:\n  - {images: {all: x}}\n":                           "has no name",
		"versions:\n  - {name: a, redis_program: keydb}\n":              "redis or valkey",
		"versions:\n  - {name: a, image: x}\n":                          "field image not found",
		"versions:\n  - {name: a, images: {all: x}, redis: sentinel}\n": "field redis not found",
	} {
		if _, err := ReadVersions(write("bad.yaml", body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", body, err, want)
		}
	}
}

// TestPlanVersions: every cell is planned once per version set, with the
// set's images and Redis program applied and in its repeat command; a set
// the Refuse hook refuses is skipped for that pair alone, with the reason.
func TestPlanVersions(t *testing.T) {
	docker := "docker"
	vs := []Version{
		{Name: "old", Images: map[string]string{"all": "lt:bullseye"}},
		{Name: "valkey", Images: map[string]string{"all": "lt:trixie"}, RedisProgram: "valkey"},
	}
	m, cells, err := Plan(PlanOptions{Scenarios: []string{"baseline"}, Backends: []string{"redis-token", "etcd"}, Seeds: 2,
		Overrides: scenarios.Overrides{Servers: &docker}, Versions: vs,
		Refuse: func(v Version, sc *scenarios.Scenario) string {
			if v.Name == "valkey" && sc.Backend == "etcd" {
				return "no reason but the test's"
			}
			return ""
		}})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range cells {
		keys = append(keys, c.Key.String())
		if want := vs[slices.IndexFunc(vs, func(v Version) bool { return v.Name == c.Key.Version })]; c.Scenario.Images["all"] != want.Images["all"] || c.Scenario.RedisProgram != want.RedisProgram {
			t.Errorf("%s: images %v, redis_program %q; want the set's", c.Key, c.Scenario.Images, c.Scenario.RedisProgram)
		}
		if c.Key.Version == "valkey" && !strings.Contains(c.Command(nil), "--redis-program valkey") {
			t.Errorf("%s: command %q does not choose valkey", c.Key, c.Command(nil))
		}
	}
	want := []string{
		"baseline / redis-token @ old (seed 1)", "baseline / redis-token @ old (seed 2)",
		"baseline / redis-token @ valkey (seed 1)", "baseline / redis-token @ valkey (seed 2)",
		"baseline / etcd @ old (seed 1)", "baseline / etcd @ old (seed 2)",
	}
	if !slices.Equal(keys, want) {
		t.Errorf("cells:\n%s\nwant:\n%s", strings.Join(keys, "\n"), strings.Join(want, "\n"))
	}
	if len(m.Skipped) != 1 || m.Skipped[0].Version != "valkey" || m.Skipped[0].Backend != "etcd" || !strings.Contains(m.Skipped[0].Why, "refused: no reason") {
		t.Errorf("skipped = %+v, want etcd @ valkey refused", m.Skipped)
	}
	if len(m.Versions) != 2 || len(m.Planned) != len(cells) {
		t.Errorf("matrix versions %d, planned %d of %d cells", len(m.Versions), len(m.Planned), len(cells))
	}
}

func TestVersionDiffs(t *testing.T) {
	cell := func(s, b, v, verdict string, seed int64) Cell {
		return Cell{CellKey: CellKey{Scenario: s, Backend: b, Version: v, Seed: seed}, Verdict: verdict}
	}
	m := &Matrix{Versions: []Version{{Name: "a"}, {Name: "b"}}, Cells: []Cell{
		cell("baseline", "etcd", "a", "valid", 1), cell("baseline", "etcd", "b", "valid", 1),
		cell("zk-pause", "zookeeper", "a", "invalid", 1), cell("zk-pause", "zookeeper", "b", "valid", 1),
		cell("failover", "redis-naive", "a", "invalid", 1), cell("failover", "redis-naive", "a", "unknown", 2),
		cell("failover", "redis-naive", "b", "unknown", 1), cell("failover", "redis-naive", "b", "invalid", 2),
		cell("etcd-pause", "etcd", "a", "invalid", 1), cell("etcd-pause", "etcd", "b", "error", 1),
	}}
	var got []string
	for _, d := range m.VersionDiffs() {
		got = append(got, d.String())
	}
	want := []string{"zk-pause / zookeeper: a invalid, b valid", "etcd-pause / etcd: a invalid, b error"}
	if !slices.Equal(got, want) {
		t.Errorf("diffs %q, want %q", got, want)
	}
	m.Versions = m.Versions[:1]
	if d := m.VersionDiffs(); d != nil {
		t.Errorf("one version set: diffs %v", d)
	}
}

func TestServerVersionText(t *testing.T) {
	for _, tc := range []struct {
		versions map[string]string
		want     string
	}{
		{nil, ""},
		{map[string]string{"redis-0": "6.0.16", "redis-1": "6.0.16"}, "6.0.16"},
		{map[string]string{"postgres": "13.16 (Debian 13.16-0+deb11u1)"}, "13.16"},
		{map[string]string{"redis-primary": "valkey 8.1.1", "sentinel-0": "valkey 8.1.1"}, "valkey 8.1.1"},
		{map[string]string{"zookeeper-0": "3.4.13-6--1", "postgres": "13.16 (Debian)"}, "13.16, 3.4.13"},
		{map[string]string{"mariadb": "11.8.9-MariaDB-0+deb13u1 from Debian"}, "11.8.9"},
		{map[string]string{"x": "unknown"}, "unknown"},
	} {
		if got := (Cell{ServerVersions: tc.versions}).ServerVersionText(); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.versions, got, tc.want)
		}
	}
}
