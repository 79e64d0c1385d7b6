package cluster

import "context"

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
