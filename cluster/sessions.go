package cluster

import (
	"context"
	"fmt"
	"strings"

	"github.com/locktorture/locktorture/cluster/links"
)

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

// RedisClientName is the name (CLIENT SETNAME) of client process p's
// connections to Redis, by which a session kill finds them.
func RedisClientName(p int) string { return "locktorture-" + links.ClientName(p) }

// KillSessions has Redis close client connections (CLIENT KILL ID): those
// of the clients named, or, with none, every lock client's (named
// locktorture-p<N>). A Redis lock is a key, not a session: the key stays
// until its TTL runs out.
func (r *Redis) KillSessions(ctx context.Context, clients []int) ([]map[string]any, error) {
	v, err := redisCall(ctx, r.endpoint(), "CLIENT", "LIST")
	if err != nil {
		return nil, fmt.Errorf("%s: client list: %w", r.Name(), err)
	}
	list, _ := v.(string)
	want := map[string]bool{}
	for _, p := range clients {
		want[RedisClientName(p)] = true
	}
	var out []map[string]any
	for _, line := range strings.Split(list, "\n") {
		f := map[string]string{}
		for _, kv := range strings.Fields(line) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				f[k] = v
			}
		}
		name := f["name"]
		if !strings.HasPrefix(name, "locktorture-p") || len(want) > 0 && !want[name] {
			continue
		}
		n, err := redisCall(ctx, r.endpoint(), "CLIENT", "KILL", "ID", f["id"])
		if err != nil {
			return out, fmt.Errorf("%s: client kill: %w", r.Name(), err)
		}
		killed, _ := n.(int64)
		out = append(out, map[string]any{"server": r.Name(), "client": strings.TrimPrefix(name, "locktorture-"), "id": f["id"], "killed": killed == 1})
	}
	return out, nil
}
