package zookeeper

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/local"
)

// TestZooKeeperClassArchive: a member started on this machine maps the
// class data archive (its /proc maps name the file), made in the cache
// the first time and found there by the next run's member, and serves; a
// process without an archive it could make starts its members as before.
func TestZooKeeperClassArchive(t *testing.T) {
	requireZooKeeper(t)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	cdsState.Lock()
	cdsState.done = map[string]string{}
	cdsState.Unlock()
	ctx := context.Background()
	for run := range 2 {
		c, err := cluster.New(cluster.Options{TempDir: t.TempDir(), LogDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		z, err := Start(ctx, c, Options{})
		if err != nil {
			c.Close()
			t.Fatal(err)
		}
		m := z.Members()[0]
		maps := memberMaps(t, m)
		c.Close()
		archives, _ := filepath.Glob(filepath.Join(local.CacheDir(), "zookeeper-cds-*", cdsArchiveName))
		if len(archives) != 1 || !strings.HasPrefix(archives[0], cache) {
			t.Fatalf("run %d: archives in the cache %s: %v, want one", run, cache, archives)
		}
		if !bytes.Contains(maps, []byte(archives[0])) {
			t.Fatalf("run %d: the member does not map %s", run, archives[0])
		}
	}
}

// memberMaps is /proc/<pid>/maps of m's JVM, found by its temp dir flag.
func memberMaps(t *testing.T, m *Member) []byte {
	t.Helper()
	want := []byte("-Djava.io.tmpdir=" + m.dataDir + "\x00")
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmd, want) {
			continue
		}
		maps, err := os.ReadFile(filepath.Join("/proc", e.Name(), "maps"))
		if err != nil {
			t.Fatal(err)
		}
		return maps
	}
	t.Fatalf("no process runs member %s", m.Name())
	return nil
}
