package cluster

// What the core asks of a run's servers beyond Server, each through a small
// interface a kind's servers implement or not: their versions (Versioner)
// and ending client sessions (sessionKiller).

import (
	"context"
	"fmt"
)

// ServerVersion asks a server for its version, as the server reports it
// (each kind's Versioner: Redis and Sentinel INFO server's redis_version,
// PostgreSQL's SHOW server_version, etcd's /version, ZooKeeper's srvr).
func (c *Cluster) ServerVersion(ctx context.Context, s Server) (string, error) {
	if v, ok := s.(Versioner); ok {
		return v.Version(ctx)
	}
	return "", fmt.Errorf("%s: no way to ask its version", s.Name())
}

// ServerVersions asks every server (and Sentinel) for its version, by
// name; a server that does not answer is left out.
func (c *Cluster) ServerVersions(ctx context.Context) map[string]string {
	all := append(c.Servers(), c.Companions()...)
	out := map[string]string{}
	for _, s := range all {
		if v, err := c.ServerVersion(ctx, s); err == nil {
			out[s.Name()] = v
		}
	}
	return out
}

// sessionKiller is a server (or a replicated group of them) that can end
// client sessions on its own, as an operator, a pooler or a timeout would.
// KillSessions ends the sessions of the clients named (process numbers),
// or, with none named, the sessions that hold a lock; it returns what it
// ended, for the nemesis op's value.
type sessionKiller interface {
	KillSessions(ctx context.Context, clients []int) ([]map[string]any, error)
}

// SessionKillers lists what can end the run's client sessions: every
// server that can (PostgreSQL, each Redis server, MariaDB), the etcd
// cluster (once, not per member: a revoked lease is gone from every
// member) and the ZooKeeper ensemble (once: a closed session is gone from
// every member).
func (c *Cluster) SessionKillers() []sessionKiller {
	var out []sessionKiller
	for _, s := range c.Servers() {
		if k, ok := s.(sessionKiller); ok {
			out = append(out, k)
		}
	}
	for _, g := range c.keptGroups() {
		if _, server := g.(Server); server {
			continue // listed among the servers already
		}
		if k, ok := g.(sessionKiller); ok {
			out = append(out, k)
		}
	}
	return out
}
