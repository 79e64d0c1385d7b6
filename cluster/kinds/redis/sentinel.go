package redis

import (
	"context"
	"fmt"
	"net"
	"os"
	"path"
	"strings"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/links"
	"github.com/locktorture/locktorture/internal/journal"
)

// sentinelMaster is the name the Sentinels monitor the primary under.
const sentinelMaster = "locktorture"

// Sentinel is one redis-sentinel process.
type Sentinel struct {
	cluster.Companion
}

// SentinelGroup is a primary, a replica and three Sentinels, the setup of
// the Redis docs' failover race. The replica replicates through a link, so
// a nemesis can cut replication.
type SentinelGroup struct {
	// Primary and Replica are the servers in their initial roles.
	Primary, Replica *Redis
	// Sentinels watch the primary.
	Sentinels []*Sentinel
	// Replication is the replica's link to the primary (nil without links).
	Replication *links.Link
	// Master is the name the Sentinels monitor the primary under; empty
	// means sentinelMaster (the groups the harness starts).
	Master string
	// MasterAuth is what the primary and replica ask of clients (the
	// Sentinels send clients there).
	MasterAuth *cluster.Auth
	// journal records the replication cut's undo on someone else's
	// servers (nil: not journaled).
	journal *journal.Journal
}

// MasterName is the name the Sentinels monitor the primary under.
func (g *SentinelGroup) MasterName() string {
	if g.Master == "" {
		return sentinelMaster
	}
	return g.Master
}

// SentinelAddrs lists the Sentinels' addresses.
func (g *SentinelGroup) SentinelAddrs() []string {
	out := make([]string, len(g.Sentinels))
	for i, s := range g.Sentinels {
		out[i] = s.Addr()
	}
	return out
}

// PrimaryAddr asks the Sentinels which server is the primary now.
func (g *SentinelGroup) PrimaryAddr(ctx context.Context) (string, error) {
	var last error
	for _, s := range g.Sentinels {
		v, err := redisCall(ctx, endpoint(s), "SENTINEL", "get-master-addr-by-name", g.MasterName())
		if err != nil {
			last = err
			continue
		}
		if a, ok := v.([]any); ok && len(a) == 2 {
			host, _ := a[0].(string)
			port, _ := a[1].(string)
			return net.JoinHostPort(host, port), nil
		}
	}
	return "", fmt.Errorf("cluster: no Sentinel names a primary: %v", last)
}

// ForceFailover tells a Sentinel to fail the primary over now (SENTINEL
// FAILOVER), as an operator or an orchestrator would: no wait for the
// Sentinels to agree that the primary is down, no election (which can
// split its vote and retry seconds later).
func (g *SentinelGroup) ForceFailover(ctx context.Context) error {
	var last error
	for _, s := range g.Sentinels {
		if _, err := redisCall(ctx, endpoint(s), "SENTINEL", "failover", g.MasterName()); err != nil {
			last = err
			continue
		}
		return nil
	}
	return fmt.Errorf("cluster: no Sentinel would fail over: %w", last)
}

// SentinelGroupOf returns c's Sentinel group, or nil (was
// Cluster.SentinelGroup).
func SentinelGroupOf(c *cluster.Cluster) *SentinelGroup {
	g, _ := cluster.Kept[*SentinelGroup](c, Kind)
	return g
}

// keep makes g c's Sentinel group (the Redis kind's group: cluster.Group).
func keep(c *cluster.Cluster, g *SentinelGroup) {
	_, _ = cluster.Group(c, Kind, func(*SentinelGroup, bool) (*SentinelGroup, error) { return g, nil })
}

// Companions are the group's Sentinels (cluster.Companioned): not among
// the cluster's servers, but asked their versions, watched, and named to
// clients.
func (g *SentinelGroup) Companions() []cluster.Server {
	out := make([]cluster.Server, len(g.Sentinels))
	for i, s := range g.Sentinels {
		out[i] = s
	}
	return out
}

// ClientCompanions adds the group to what a client dials (the Sentinels
// at addr's address for each, the master's name and credentials), and
// the master's credentials as Redis's when no Redis server gave any.
func (g *SentinelGroup) ClientCompanions(set *cluster.ServerSet, addr func(cluster.Server) string) {
	set.Sentinel = &cluster.SentinelSet{Master: g.MasterName(), MasterAuth: g.MasterAuth}
	for _, s := range g.Sentinels {
		set.Sentinel.Addrs = append(set.Sentinel.Addrs, addr(s))
		set.Auth.Add(SentinelKind, s.Auth().WithServerName(s.Addr()))
	}
	if len(set.Auth[Kind]) == 0 && g.MasterAuth != nil {
		set.Auth.Add(Kind, g.MasterAuth)
	}
}

// StartSentinelGroup starts on c a primary (A), a replica (B) replicating
// from it — through a link when links are enabled — and three Sentinels,
// and waits until the replica is in sync and every Sentinel is connected
// to it and has read its INFO (so a forced failover can promote it at
// once). It was Cluster.StartSentinelGroup.
func StartSentinelGroup(ctx context.Context, c *cluster.Cluster, persistence bool) (*SentinelGroup, error) {
	if g := SentinelGroupOf(c); g != nil {
		return g, nil
	}
	if g, given, err := handOutSentinelGroup(c); given {
		return g, err
	}
	_, sentinel := cluster.RedisPrograms(c.RedisProgram())
	bin, err := c.Provider().Program(sentinel, sentinel)
	if err != nil {
		return nil, err
	}
	primary, err := Start(ctx, c, Options{Name: "redis-primary", Persistence: persistence})
	if err != nil {
		return nil, err
	}
	g := &SentinelGroup{Primary: primary, MasterAuth: primary.Auth()}
	upstream := primary.Addr()
	if l, err := c.Link("redis-replica", primary); err != nil {
		return nil, err
	} else if l != nil {
		g.Replication, upstream = l, l.Addr()
	}
	host, port, _ := net.SplitHostPort(upstream)
	// The replica announces its own address (not the one its link to the
	// primary comes from), so Sentinels name it as clients reach it.
	replicaHost, err := c.Provider().Host(ctx, "redis-replica")
	if err != nil {
		return nil, err
	}
	g.Replica, err = Start(ctx, c, Options{Name: "redis-replica", Persistence: persistence,
		Args: []string{"--replicaof", host, port, "--replica-announce-ip", replicaHost}})
	if err != nil {
		return nil, err
	}
	if err := cluster.WaitFor(ctx, 15*time.Second, func() error {
		v, err := redisCall(ctx, endpoint(g.Replica), "INFO", "replication")
		if err != nil {
			return err
		}
		if s, _ := v.(string); !strings.Contains(s, "master_link_status:up") {
			return fmt.Errorf("replica not in sync yet")
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("cluster: %w: replica: %w", cluster.ErrStart, err)
	}
	for i := range 3 {
		s, err := startSentinel(ctx, c, bin, fmt.Sprintf("sentinel-%d", i), primary)
		if err != nil {
			return nil, err
		}
		g.Sentinels = append(g.Sentinels, s)
	}
	for _, s := range g.Sentinels {
		if err := cluster.WaitFor(ctx, 15*time.Second, func() error {
			v, err := redisCall(ctx, endpoint(s), "SENTINEL", "replicas", sentinelMaster)
			if err != nil {
				return err
			}
			return sentinelSeesReplica(s.Name(), v)
		}); err != nil {
			return nil, fmt.Errorf("cluster: %w: %w", cluster.ErrStart, err)
		}
	}
	keep(c, g)
	return g, nil
}

// sentinelSeesReplica says (as an error) why a Sentinel's SENTINEL
// replicas reply v does not yet show a replica it could promote: one it
// is connected to, whose INFO it has read and whose link to the primary is
// up. A Sentinel that only heard of the replica from the primary's INFO
// answers a forced failover NOGOODSLAVE, and the group then fails over by
// the Sentinels' own detection and election, seconds later.
func sentinelSeesReplica(name string, v any) error {
	replicas, _ := v.([]any)
	if len(replicas) == 0 {
		return fmt.Errorf("%s does not know the replica yet", name)
	}
	for _, r := range replicas {
		fields, _ := r.([]any)
		f := map[string]string{}
		for i := 0; i+1 < len(fields); i += 2 {
			k, _ := fields[i].(string)
			val, _ := fields[i+1].(string)
			f[k] = val
		}
		if strings.Contains(f["flags"], "disconnected") || f["info-refresh"] == "0" || f["master-link-status"] != "ok" {
			return fmt.Errorf("%s does not see replica %s ready yet (flags %s, master link %s)", name, f["name"], f["flags"], f["master-link-status"])
		}
	}
	return nil
}

// startSentinel starts the Sentinel called name (the program bin) on c,
// monitoring primary, and waits until it answers PING.
func startSentinel(ctx context.Context, c *cluster.Cluster, bin, name string, primary *Redis) (*Sentinel, error) {
	pv := c.Provider()
	dir, host, err := c.ServerHome(ctx, name)
	if err != nil {
		return nil, err
	}
	port, err := pv.Port(26379)
	if err != nil {
		return nil, err
	}
	conf := path.Join(dir, "sentinel.conf")
	text := fmt.Sprintf(`port %d
bind %s
protected-mode no
dir %s
sentinel monitor %s %s %d 2
sentinel down-after-milliseconds %s 1000
sentinel failover-timeout %s 2500
sentinel parallel-syncs %s 1
`, port, host, dir, sentinelMaster, primary.Host(), primary.Port(), sentinelMaster, sentinelMaster, sentinelMaster)
	s := &Sentinel{cluster.NewCompanion(SentinelKind, name)}
	s.SetAddr(host, port)
	mode := os.FileMode(0o666) // Sentinel rewrites its file
	if a := primary.Auth(); a != nil {
		// Locked: the Sentinel asks its clients (and the other Sentinels)
		// for the password, and gives the primary's when it talks to it.
		text += fmt.Sprintf("requirepass %s\nsentinel auth-user %s %s\nsentinel auth-pass %s %s\n",
			a.Password, sentinelMaster, a.Username, sentinelMaster, a.Password)
		s.SetAuth(&cluster.Auth{Password: a.Password})
		mode = 0o600
	}
	var tlsFiles []cluster.File
	if c.ServersTLS() {
		var ca, cert, key string
		if tlsFiles, ca, cert, key, err = c.ServerTLS(name, dir, host); err != nil {
			return nil, err
		}
		a := redisTLSArgs(port, ca, cert, key)
		for i := 0; i+1 < len(a); i += 2 {
			text += strings.TrimPrefix(a[i], "--") + " " + a[i+1] + "\n"
		}
		auth, err := withTLS(c, s.Auth())
		if err != nil {
			return nil, err
		}
		s.SetAuth(auth)
		mode = 0o600
	}
	u, err := c.Launch(ctx, cluster.Spec{Name: name, Kind: "redis", Program: bin, Args: []string{conf}, Dir: dir, Shell: redisShell(primary.Auth() != nil),
		Files:   append([]cluster.File{{Path: conf, Content: []byte(text), Mode: mode}}, tlsFiles...),
		LogPath: c.LogPath(name)})
	if err != nil {
		return nil, err
	}
	s.SetUnit(u)
	if err := u.Start(ctx); err != nil {
		return nil, err
	}
	if err := cluster.WaitUnit(ctx, name, u, func(ctx context.Context) error { return pingRedis(ctx, endpoint(s)) }); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return s, nil
}

// SentinelKind names Sentinels (Kind): a Sentinel group belongs to the
// Redis kind, and a servers file names it under sentinel.
const SentinelKind = "sentinel"
