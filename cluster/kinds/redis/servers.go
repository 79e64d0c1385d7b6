package redis

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/links"
)

// externalRedis hands out the next external Redis server.
func externalRedis(c *cluster.Cluster, opt Options) (*Redis, error) {
	addr, n, err := c.NextExternal(Kind)
	if err != nil {
		return nil, err
	}
	if opt.Name == "" {
		opt.Name = fmt.Sprintf("redis-%d", n)
	}
	return externalRedisAt(c, opt, addr, c.External().Auth.For(Kind, n)), nil
}

// externalRedisAt lists the external Redis server at addr, asking for
// auth, among the cluster's.
func externalRedisAt(c *cluster.Cluster, opt Options, addr string, auth *cluster.Auth) *Redis {
	r := newRedis(opt.Name, opt, c.KeyMatch())
	r.SetExternal(addr)
	r.SetAuth(auth)
	r.SetUnit(c.ExternalUnit(opt.Name, addr))
	c.AddServer(r)
	return r
}

// handOutSentinelGroup is the Sentinel group someone else runs, and
// whether the cluster is one that hands out servers at all (then an error
// when it names no group). Its primary and replica are the group's
// servers, or else the first two external Redis servers, when named.
func handOutSentinelGroup(c *cluster.Cluster) (*SentinelGroup, bool, error) {
	if c.External() == nil {
		return nil, false, nil
	}
	g, err := externalSentinelGroup(c)
	return g, true, err
}

// externalSentinelGroup hands out the external Sentinel group.
func externalSentinelGroup(c *cluster.Cluster) (*SentinelGroup, error) {
	ext := c.External()
	gs := ext.Sentinel
	if gs == nil || len(gs.Addrs) == 0 {
		return nil, fmt.Errorf("cluster: %w: the backend wants a Sentinel group, but the servers file names none", cluster.ErrStart)
	}
	g := &SentinelGroup{Master: gs.Master, MasterAuth: gs.MasterAuth, journal: ext.Journal}
	if g.MasterAuth == nil {
		// A client process is given the master's credentials as auth.redis.
		g.MasterAuth = ext.Auth.For(Kind, 0)
	}
	serverAuth := func(i int) *cluster.Auth {
		if i < len(gs.ServersAuth) && gs.ServersAuth[i] != nil {
			return gs.ServersAuth[i]
		}
		return g.MasterAuth
	}
	switch {
	case len(gs.Servers) > 0:
		g.Primary = externalRedisAt(c, Options{Name: "redis-primary"}, gs.Servers[0], serverAuth(0))
		if len(gs.Servers) > 1 {
			g.Replica = externalRedisAt(c, Options{Name: "redis-replica"}, gs.Servers[1], serverAuth(1))
		}
	default:
		if len(ext.Addrs(Kind)) > 0 {
			g.Primary, _ = externalRedis(c, Options{Name: "redis-primary"})
		}
		if len(ext.Addrs(Kind)) > 1 {
			g.Replica, _ = externalRedis(c, Options{Name: "redis-replica"})
		}
	}
	for i, a := range gs.Addrs {
		name := fmt.Sprintf("sentinel-%d", i)
		s := &Sentinel{cluster.NewCompanion(SentinelKind, name)}
		s.SetExternal(a)
		s.SetUnit(c.ExternalUnit(name, a))
		s.SetAuth(ext.Auth.For(SentinelKind, i))
		g.Sentinels = append(g.Sentinels, s)
	}
	keep(c, g)
	return g, nil
}

// checkSentinel asks each Sentinel of a servers file's group whether it
// knows the master, and the master it names whether it takes masterAuth.
func checkSentinel(ctx context.Context, sentinels []cluster.Endpoint, master string, masterAuth *cluster.Auth) error {
	for _, e := range sentinels {
		r, err := redisCall(ctx, e, "SENTINEL", "get-master-addr-by-name", master)
		if err == nil && r == nil {
			err = fmt.Errorf("it does not know a master named %q", master)
		}
		if err != nil {
			return fmt.Errorf("%w: sentinel %s: %w", cluster.ErrServerCheck, e.Addr, err)
		}
		// The master the Sentinels name must take the master's credentials.
		if a, ok := r.([]any); ok && len(a) == 2 {
			m := cluster.Endpoint{Addr: net.JoinHostPort(fmt.Sprint(a[0]), fmt.Sprint(a[1])), Auth: masterAuth}
			if _, err := redisCall(ctx, m, "PING"); err != nil {
				return fmt.Errorf("%w: redis %s (the master sentinel %s names): %w", cluster.ErrServerCheck, m.Addr, e.Addr, err)
			}
		}
	}
	return nil
}

// sentinelPrimary is a servers file's Sentinel group's current primary,
// as the first Sentinel that answers names it ("" when none does).
func sentinelPrimary(ctx context.Context, sentinels []cluster.Endpoint, master string) string {
	for _, e := range sentinels {
		if v, err := redisCall(ctx, e, "SENTINEL", "get-master-addr-by-name", master); err == nil {
			if a, ok := v.([]any); ok && len(a) == 2 {
				return fmt.Sprintf("%v:%v", a[0], a[1])
			}
		}
	}
	return ""
}

// ClientName is the name (CLIENT SETNAME) of client process p's
// connections to Redis, by which a session kill finds them.
func ClientName(p int) string { return "locktorture-" + links.ClientName(p) }

// KillSessions has Redis close client connections (CLIENT KILL ID): those
// of the clients named, or, with none, every lock client's (named
// locktorture-p<N>). A Redis lock is a key, not a session: the key stays
// until its TTL runs out.
func (r *Redis) KillSessions(ctx context.Context, clients []int) ([]map[string]any, error) {
	v, err := redisCall(ctx, endpoint(r), "CLIENT", "LIST")
	if err != nil {
		return nil, fmt.Errorf("%s: client list: %w", r.Name(), err)
	}
	list, _ := v.(string)
	want := map[string]bool{}
	for _, p := range clients {
		want[ClientName(p)] = true
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
		n, err := redisCall(ctx, endpoint(r), "CLIENT", "KILL", "ID", f["id"])
		if err != nil {
			return out, fmt.Errorf("%s: client kill: %w", r.Name(), err)
		}
		killed, _ := n.(int64)
		out = append(out, map[string]any{"server": r.Name(), "client": strings.TrimPrefix(name, "locktorture-"), "id": f["id"], "killed": killed == 1})
	}
	return out, nil
}
