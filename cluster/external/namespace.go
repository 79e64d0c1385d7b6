package external

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/journal"
)

// A run against servers someone else runs touches nothing outside its own
// namespace: every lock key is "<namespace>:k<i>" (so each backend's server
// keys — locktorture:lock:<namespace>:k0, locktorture/lock/<namespace>:k0,
// advisory lock ids hashed from the key — carry it), and PostgreSQL tables
// live in a schema of the run's own. Cleanup removes exactly those.

// NewNamespace returns a fresh namespace for one external run: "lt" and
// eight hex digits.
func NewNamespace() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "lt" + hex.EncodeToString(b[:])
}

// Prepare makes what the run's namespace needs on the servers of f the
// run uses (each kind's cluster.Preparer: PostgreSQL's schema of the run's own, which
// CREATE SCHEMA never adopts from someone else) and returns the servers as
// an external cluster takes them — at the addresses the kinds' Prepare gave —
// with the controls the file names.
func Prepare(ctx context.Context, f *cluster.ServersFile, namespace string, kinds []string) (cluster.ServerSet, error) {
	g := f.ServerSet()
	g.Controls = f.Controls()
	g.KeyMatch = "*" + namespace + ":k*"
	for _, kind := range kinds {
		k, _ := cluster.LookupKind(kind)
		p, ok := k.Abilities.(cluster.Preparer)
		if !ok {
			continue
		}
		for i, a := range g.Servers[kind] {
			run, err := p.Prepare(ctx, cluster.Endpoint{Addr: a, Auth: g.Auth.For(kind, i)}, namespace)
			if err != nil {
				return cluster.ServerSet{}, err
			}
			if c, ok := g.Controls[a]; ok && run != a {
				delete(g.Controls, a)
				g.Controls[run] = c
			}
			g.Servers[kind][i] = run
		}
	}
	return g, nil
}

// Cleanup removes everything of the run's namespace from the servers f
// names that the run used, by each kind's cluster.Cleaner: Redis keys holding "<namespace>:k" (on
// every Redis server and the Sentinels' current primary), etcd keys under
// locktorture/ holding it, the ZooKeeper znodes of its keys, and the run's
// PostgreSQL schema. It touches nothing else. It tries every kind and
// returns every problem.
func Cleanup(ctx context.Context, f *cluster.ServersFile, namespace string, kinds []string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if namespace == "" {
		return errors.New("cluster: cleanup: no namespace")
	}
	var errs []error
	for _, kind := range kinds {
		k, _ := cluster.LookupKind(kind)
		c, ok := k.Abilities.(cluster.Cleaner)
		if !ok {
			continue
		}
		servers := cluster.Endpoints(f.Servers[kind])
		if p := sentinelPrimary(ctx, f, k); p != "" {
			servers = append(servers, cluster.Endpoint{Addr: p, Auth: f.Sentinel.PrimaryAuth()})
		}
		if len(servers) == 0 {
			continue
		}
		if err := c.Cleanup(ctx, servers, namespace); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cluster: cleanup of run %s: %w", namespace, err)
	}
	return nil
}

// sentinelPrimary is the current primary of f's Sentinel group, as the
// first Sentinel that answers names it, when k is the kind the group
// belongs to (the cluster.SentinelGroup: redis); "" when none does.
func sentinelPrimary(ctx context.Context, f *cluster.ServersFile, k cluster.Kind) string {
	s := f.Sentinel
	g, ok := k.Abilities.(cluster.SentinelGroup)
	if s == nil || !ok {
		return ""
	}
	return g.SentinelPrimary(ctx, cluster.Endpoints(s.Addrs), s.Master)
}

// undoNamespace removes an external run's keys and schema (args:
// servers_file, namespace, kinds): after Prepare. Registered here, before
// a run's guard starts (cluster/kinds/all links this package).
const undoNamespace = "external-cleanup"

func init() {
	journal.Register(undoNamespace, func(ctx context.Context, args map[string]string) error {
		f, err := cluster.LoadServersFile(args["servers_file"])
		if err != nil {
			return err
		}
		return Cleanup(ctx, f, args["namespace"], strings.Split(args["kinds"], ","))
	})
}

// NamespaceUndo is the journal's action that removes an external run's
// keys and schema (namespace) from the servers a servers file names.
func NamespaceUndo(serversFile, namespace string, kinds []string) journal.Action {
	return journal.Action{Kind: undoNamespace, What: "remove run " + namespace + "'s keys from the servers in " + serversFile,
		Args: map[string]string{"servers_file": serversFile, "namespace": namespace, "kinds": strings.Join(kinds, ",")}}
}
