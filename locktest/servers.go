package locktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/scenarios"
)

// Servers shared by the subtests of one test binary: started by the first
// scenario that can share them, stopped by Main when the tests are done.
// Each run on them is an external run (a servers file the suite writes),
// so each gets a key namespace of its own and removes its keys after.

type sharedSet struct {
	cl   *cluster.Cluster
	file string
	err  error
}

var (
	sharedMu sync.Mutex
	shared   = map[string]*sharedSet{}
)

// sharedServers returns the servers file of the shared servers of kinds
// in mode where, starting them on first use.
func sharedServers(where string, kinds []string, images map[string]string, sc *scenarios.Scenario) (string, error) {
	ks := append([]string(nil), kinds...)
	sort.Strings(ks)
	key := fmt.Sprint(where, " ", strings.Join(ks, ","), " ", images)
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if s, ok := shared[key]; ok {
		return s.file, s.err
	}
	s := &sharedSet{}
	shared[key] = s
	s.cl, s.file, s.err = startShared(where, kinds, images, sc)
	return s.file, s.err
}

func startShared(where string, kinds []string, images map[string]string, sc *scenarios.Scenario) (*cluster.Cluster, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := cluster.New(cluster.Options{Servers: where, Images: images})
	if err != nil {
		return nil, "", err
	}
	_, factory, err := backends.Lookup(scenarios.ExecBackend)
	if err == nil {
		var b backends.Backend
		b, err = factory(ctx, backends.Env{Cluster: cl, TTL: sc.TTL.D(), OpTimeout: sc.Timeout.D(), ExecServers: kinds})
		if b != nil {
			_ = b.Close()
		}
	}
	if err != nil {
		_ = cl.Close()
		return nil, "", fmt.Errorf("starting the shared servers: %w", err)
	}
	sv := serversOf(cl, -1)
	doc := map[string]any{}
	for k, v := range map[string][]string{"redis": sv.Redis, "etcd": sv.Etcd, "zookeeper": sv.ZooKeeper} {
		if len(v) > 0 {
			doc[k] = v
		}
	}
	if sv.Postgres != "" {
		doc["postgres"] = sv.Postgres
	}
	b, err := yaml.Marshal(doc)
	if err == nil {
		file := filepath.Join(cl.TempDir(), "servers.yaml")
		if err = os.WriteFile(file, b, 0o600); err == nil {
			return cl, file, nil
		}
	}
	_ = cl.Close()
	return nil, "", fmt.Errorf("locktest: the shared servers' file: %w", err)
}

// serversOf are the cluster's servers as process p dials them (through
// its own links), or as they are for p < 0.
func serversOf(cl *cluster.Cluster, p int) Servers { return asServers(cl.ClientServers(p)) }

// stopShared stops every shared server.
func stopShared() error {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	var errs []error
	for k, s := range shared {
		if s.cl != nil {
			errs = append(errs, s.cl.Close())
		}
		delete(shared, k)
	}
	return errors.Join(errs...)
}
