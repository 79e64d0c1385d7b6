package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/redis"
	"github.com/locktorture/locktorture/cluster/links"
)

// partition cuts links silently (no reset: packets vanish, as in a real
// partition). Topologies:
//   - isolate-client: every link of the target clients;
//   - isolate-server: every client's link to the target servers;
//   - cut: the target clients from the target servers only (asymmetric, as
//     in Kleppmann's Redlock scenario) — the default when both are given;
//   - halves: clients split in two halves, servers too; each client half
//     loses the other server half;
//   - ring: each client keeps a different majority of the servers
//     (client i keeps servers i, i+1, ... mod n), so no two agree;
//   - replication: the replica's link to its primary (Sentinel setups);
//   - members: the target servers from the other members of their
//     ensemble (ZooKeeper), on the links between members; clients' links
//     stay. Those links hold the bytes rather than drop them, as a
//     partition does to a TCP connection (see members.go).
//
// Direction downstream makes it one-way: requests arrive and the server
// acts, but the client never hears back.
type partition struct{}

func init() {
	register(Info{
		Name:        "partition",
		Description: "silent network partition on chosen links: isolate a client or server, cut clients from servers, halves, majorities-ring, one-way, or members of an ensemble from the others",
		AppliesTo:   "backends with servers",
	}, partition{})
}

func (partition) UsesLinks() bool { return true }

// PartitionParams are partition's: which links to cut, by topology.
type PartitionParams struct {
	ClientSet `yaml:",inline"`
	ServerSet `yaml:",inline"`
	// Topology is isolate-client, isolate-server, cut, halves, ring,
	// replication or members; left out, cut when clients and servers are
	// both given, else isolate-client or isolate-server.
	Topology string `yaml:"topology,omitempty"`
	// Direction is both (the default), upstream (requests) or downstream
	// (replies: one-way).
	Direction string `yaml:"direction,omitempty"`
}

// topologies are the shapes a partition takes.
var topologies = []string{"isolate-client", "isolate-server", "cut", "halves", "ring", "replication", TopologyMembers}

func (p *PartitionParams) String() string {
	return words(p.ClientSet.words(), p.ServerSet.words(), word("topology", p.Topology), word("direction", p.Direction))
}

// Validate checks the clients, the topology (replication needs Sentinel)
// and the direction.
func (p *PartitionParams) Validate(s Shape) error {
	if err := p.ClientSet.validate(s.Clients); err != nil {
		return err
	}
	if _, err := links.ParseDirection(p.Direction); err != nil {
		return keyErr("direction", "%v", err)
	}
	if p.Topology != "" && !slices.Contains(topologies, p.Topology) {
		return keyErr("topology", "unknown topology %q (%s)", p.Topology, strings.Join(topologies, ", "))
	}
	if p.Topology == TopologyMembers {
		return validateMembers(s, "partition", p.Servers, p.Clients)
	}
	if p.Topology == "replication" && !s.Sentinel {
		return keyErr("topology", "topology replication needs `redis: sentinel`")
	}
	if p.Topology == "replication" {
		// On someone else's servers, the replicas themselves are told to
		// stop syncing: only with control of them.
		if err := s.controlled("partition (topology replication)"); err != nil {
			return keyErr("topology", "%v", err)
		}
	}
	if err := p.ServerSet.validate(); err != nil {
		return err
	}
	return p.cutsSomething()
}

// cutsSomething refuses the topologies that take their links from the
// clients and servers named when a side they need is not named: such a
// partition would run cutting nothing, a fault that never happened.
func (p *PartitionParams) cutsSomething() error {
	clients, servers := len(p.List()) > 0, len(p.Servers) > 0
	switch {
	case p.Topology == "isolate-client" && !clients:
		return keyErr("clients", "topology isolate-client cuts no link without clients to cut off (clients: or process:)")
	case p.Topology == "isolate-server" && !servers:
		return keyErr("servers", "topology isolate-server cuts no link without servers to cut off (servers:)")
	case p.Topology == "cut" && !clients:
		return keyErr("clients", "topology cut cuts no link without clients to cut (clients: or process:)")
	case p.Topology == "cut" && !servers:
		return keyErr("servers", "topology cut cuts no link without servers to cut the clients from (servers:)")
	case p.Topology == "" && !clients && !servers:
		return keyErr("servers", "a partition with neither clients nor servers (and no topology) cuts no link: name the servers or clients to cut off, or give a topology")
	}
	return nil
}

// ServerNames returns the servers named that exist before the run (the
// members topology's `leader` is found when the fault starts).
func (p *PartitionParams) ServerNames() []string {
	if p.Topology == TopologyMembers {
		return memberNames(p.Servers)
	}
	return p.Servers
}

func (partition) Params() Params { return &PartitionParams{} }

func (partition) Applies(s Shape) error {
	if len(s.Kinds) == 0 {
		return fmt.Errorf("partition does not apply to %s: it talks to no server", s.Backend)
	}
	return nil
}

func (partition) RandomParams(rng *rand.Rand, env *Env) Params {
	n := len(env.Cluster.Servers())
	proc := func() ClientSet {
		p := rng.IntN(max(1, len(env.Gates)))
		return ClientSet{Proc: Proc{Process: &p}}
	}
	if peers := env.Cluster.Peers(); len(peers) > 0 && rng.IntN(4) == 0 {
		// One member (or the leader) cut from the other members.
		target := leaderTarget
		if i := rng.IntN(len(peers) + 1); i < len(peers) {
			target = letter(env, peers[i])
		}
		return &PartitionParams{ServerSet: ServerSet{Servers: []string{target}}, Topology: TopologyMembers}
	}
	switch rng.IntN(3) {
	case 0:
		return &PartitionParams{ClientSet: proc(), Topology: "isolate-client"}
	case 1:
		return &PartitionParams{ServerSet: ServerSet{Servers: randomServers(rng, env, 1)}, Topology: "isolate-server"}
	default:
		cs := proc()
		return &PartitionParams{ClientSet: cs, ServerSet: ServerSet{Servers: randomServers(rng, env, max(1, (n-1)/2))}, Topology: "cut"}
	}
}

// plan returns the (client, server) pairs to cut.
func (partition) plan(env *Env, t *PartitionParams) (map[int][]cluster.Server, error) {
	all := env.Cluster.Servers()
	servers, err := resolveServers(env, t.Servers)
	if err != nil {
		return nil, err
	}
	clients := t.List()
	topo := t.Topology
	if topo == "" {
		switch {
		case len(clients) > 0 && len(servers) > 0:
			topo = "cut"
		case len(clients) > 0:
			topo = "isolate-client"
		default:
			topo = "isolate-server"
		}
	}
	out := map[int][]cluster.Server{}
	switch topo {
	case "isolate-client":
		for _, p := range clients {
			out[p] = all
		}
	case "isolate-server":
		for _, p := range allClients(env) {
			out[p] = servers
		}
	case "cut":
		for _, p := range clients {
			out[p] = servers
		}
	case "halves":
		cs := allClients(env)
		for i, p := range cs {
			if i < len(cs)/2 {
				out[p] = all[len(all)/2:]
			} else {
				out[p] = all[:len(all)/2]
			}
		}
	case "ring":
		n := len(all)
		keep := n/2 + 1
		for _, p := range allClients(env) {
			for j := keep; j < n; j++ {
				out[p] = append(out[p], all[(p+j)%n])
			}
		}
	}
	cuts := 0
	for _, ss := range out {
		cuts += len(ss)
	}
	if cuts == 0 {
		// Halves or a ring over too few servers, or clients with no
		// server to be cut from: the fault would not happen.
		return nil, fmt.Errorf("%w: the partition cuts no link (topology %s over %d clients and %d servers)", ErrTarget, topo, len(env.Gates), len(all))
	}
	return out, nil
}

func (pt partition) Start(ctx context.Context, env *Env, params Params, d time.Duration) (map[string]any, Healer, error) {
	t := params.(*PartitionParams)
	dir, err := links.ParseDirection(t.Direction)
	if err != nil {
		return nil, nil, err
	}
	if t.Topology == "replication" {
		return cutReplication(ctx, env, dir, d)
	}
	if t.Topology == TopologyMembers {
		return cutMembers(ctx, env, t.Servers, dir, d)
	}
	cuts, err := pt.plan(env, t)
	if err != nil {
		return nil, nil, err
	}
	lf := &linkFault{}
	cutVal := map[string][]string{}
	for p := range len(env.Gates) {
		ss := cuts[p]
		if len(ss) == 0 {
			continue
		}
		ls, err := clientLinks(env, []int{p}, ss)
		if err != nil {
			_ = lf.heal(ctx)
			return nil, nil, err
		}
		for _, l := range ls {
			h, err := l.Cut(ctx, dir)
			if err != nil {
				_ = lf.heal(ctx)
				return nil, nil, err
			}
			lf.links, lf.handles = append(lf.links, l), append(lf.handles, h)
		}
		cutVal[links.ClientName(p)] = serverLabels(env, ss)
	}
	val := map[string]any{"topology": orDefault(t.Topology, "cut"), "cut": cutVal, "direction": string(dir), "ms": d.Milliseconds()}
	heal := func(ctx context.Context) (map[string]any, error) {
		return map[string]any{"cut": cutVal}, lf.heal(ctx)
	}
	return val, heal, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// cutReplication cuts the replica's link to the primary of the Sentinel
// group: writes stop reaching the replica.
func cutReplication(ctx context.Context, env *Env, dir links.Direction, d time.Duration) (map[string]any, Healer, error) {
	g := redis.SentinelGroupOf(env.Cluster)
	if g == nil {
		return nil, nil, fmt.Errorf("%w: topology replication needs `redis: sentinel`", ErrTarget)
	}
	if g.Replication == nil {
		// Someone else's servers replicate over their own connections:
		// the replicas are told to refuse their primary instead.
		healCut, err := g.CutReplication(ctx)
		if err != nil {
			return nil, nil, err
		}
		val := map[string]any{"topology": "replication", "cut": "the replicas from their primary (masterauth)", "ms": d.Milliseconds()}
		return val, func(ctx context.Context) (map[string]any, error) {
			return map[string]any{"topology": "replication"}, healCut(ctx)
		}, nil
	}
	h, err := g.Replication.Cut(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	val := map[string]any{"topology": "replication", "cut": map[string][]string{letter(env, g.Replica): {letter(env, g.Primary)}}, "direction": string(dir), "ms": d.Milliseconds()}
	heal := func(ctx context.Context) (map[string]any, error) {
		return map[string]any{"topology": "replication"}, g.Replication.Heal(ctx, h)
	}
	return val, heal, nil
}

// cutMembers cuts the named members from the other members of their
// ensemble: every link between the two sides holds its bytes in dir.
func cutMembers(ctx context.Context, env *Env, names []string, dir links.Direction, d time.Duration) (map[string]any, Healer, error) {
	side, rest, leader, err := memberSides(ctx, env, names)
	if err != nil {
		return nil, nil, err
	}
	ls, err := memberLinks(env, side, rest, dir)
	if err != nil {
		return nil, nil, err
	}
	lf := &linkFault{}
	for _, dl := range ls {
		h, err := dl.link.Hold(ctx, dl.dir)
		if err != nil {
			_ = lf.heal(ctx)
			return nil, nil, err
		}
		lf.links, lf.handles = append(lf.links, dl.link), append(lf.handles, h)
	}
	cut := cutMap(env, side, rest)
	val := map[string]any{"topology": TopologyMembers, "cut": cut, "direction": string(dir), "ms": d.Milliseconds()}
	if leader != "" {
		val["leader"] = leader
	}
	heal := func(ctx context.Context) (map[string]any, error) {
		return map[string]any{"topology": TopologyMembers, "cut": cut}, lf.heal(ctx)
	}
	return val, heal, nil
}
