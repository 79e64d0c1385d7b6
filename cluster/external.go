package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
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

// Prepare makes what the run's namespace needs on the servers the run
// uses (each kind's Prepare: PostgreSQL's schema of the run's own, which
// CREATE SCHEMA never adopts from someone else) and returns the servers as
// an external cluster takes them — at the addresses the kinds' Prepare gave —
// with the controls the file names.
func (f *ServersFile) Prepare(ctx context.Context, namespace string, kinds []string) (ServerSet, error) {
	g := f.ServerSet()
	g.Controls = f.controls()
	g.KeyMatch = "*" + namespace + ":k*"
	for _, kind := range kinds {
		k, ok := LookupKind(kind)
		if !ok || k.Prepare == nil {
			continue
		}
		for i, a := range g.Servers[kind] {
			run, err := k.Prepare(ctx, Endpoint{Addr: a, Auth: g.Auth.For(kind, i)}, namespace)
			if err != nil {
				return ServerSet{}, err
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

// Cleanup removes everything of the run's namespace from the servers the
// run used, by each kind's Cleanup: Redis keys holding "<namespace>:k" (on
// every Redis server and the Sentinels' current primary), etcd keys under
// locktorture/ holding it, the ZooKeeper znodes of its keys, and the run's
// PostgreSQL schema. It touches nothing else. It tries every kind and
// returns every problem.
func (f *ServersFile) Cleanup(ctx context.Context, namespace string, kinds []string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if namespace == "" {
		return errors.New("cluster: cleanup: no namespace")
	}
	var errs []error
	for _, kind := range kinds {
		k, ok := LookupKind(kind)
		if !ok || k.Cleanup == nil {
			continue
		}
		servers := endpoints(f.Servers[kind])
		if kind == redisKind {
			if p := f.sentinelPrimary(ctx); p != "" {
				servers = append(servers, Endpoint{Addr: p, Auth: f.Sentinel.masterAuth()})
			}
		}
		if len(servers) == 0 {
			continue
		}
		if err := k.Cleanup(ctx, servers, namespace); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cluster: cleanup of run %s: %w", namespace, err)
	}
	return nil
}

// sentinelPrimary is the file's Sentinel group's current primary, as the
// first Sentinel that answers names it ("" when none does).
func (f *ServersFile) sentinelPrimary(ctx context.Context) string {
	s := f.Sentinel
	if s == nil {
		return ""
	}
	if k, ok := LookupKind(redisKind); ok && k.SentinelPrimary != nil {
		return k.SentinelPrimary(ctx, endpoints(s.Addrs), s.Master)
	}
	return ""
}
