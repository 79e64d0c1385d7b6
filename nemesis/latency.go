package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/locktorture/locktorture/cluster/links"
)

// latency holds bytes on chosen links for a while (Kleppmann's delayed
// packet): by default the replies to the target clients from every server,
// or only from the target servers; with topology members, the traffic
// between the target servers and the other members of their ensemble.
type latency struct{}

func init() {
	register(Info{
		Name:        "latency",
		Description: "delays (and jitters) the bytes on chosen links and directions: slow replies, delayed packets",
		AppliesTo:   "backends with servers",
	}, latency{})
}

func (latency) UsesLinks() bool { return true }

// LatencyParams are latency's: the links to slow (the target clients'
// links, by default every client's, to the target servers, by default
// every server) and how.
type LatencyParams struct {
	ClientSet `yaml:",inline"`
	ServerSet `yaml:",inline"`
	// Topology is clients (the default: clients' links to servers) or
	// members (the links between the target servers and the other members
	// of their ensemble; clients' links stay).
	Topology string `yaml:"topology,omitempty"`
	// Direction is both, upstream (requests) or downstream (replies, the
	// default). With topology members: both (the default), upstream (what
	// the target servers send to the others) or downstream (what they
	// receive).
	Direction string `yaml:"direction,omitempty"`
	// Latency is the delay added to each byte on the links (required).
	Latency Duration `yaml:"latency,omitempty"`
	// Jitter varies the delay by up to this much.
	Jitter Duration `yaml:"jitter,omitempty"`
}

func (p *LatencyParams) String() string {
	return words(p.ClientSet.words(), p.ServerSet.words(), word("topology", p.Topology), word("direction", p.Direction), durWord("latency", p.Latency), durWord("jitter", p.Jitter))
}

// ServerNames returns the servers named that exist before the run (the
// members topology's `leader` is found when the fault starts).
func (p *LatencyParams) ServerNames() []string {
	if p.Topology == TopologyMembers {
		return memberNames(p.Servers)
	}
	return p.Servers
}

// Validate requires a positive latency.
func (p *LatencyParams) Validate(s Shape) error {
	if err := p.ClientSet.validate(s.Clients); err != nil {
		return err
	}
	if p.Latency <= 0 {
		return keyErr("latency", "needs `latency:` above 0 (e.g. 2s), not %s", p.Latency)
	}
	if p.Jitter < 0 {
		return keyErr("jitter", "jitter must be 0 or more, not %s", p.Jitter)
	}
	if _, err := links.ParseDirection(p.Direction); err != nil {
		return keyErr("direction", "%v", err)
	}
	switch p.Topology {
	case "", "clients":
	case TopologyMembers:
		return validateMembers(s, "latency", p.Servers, p.Clients)
	default:
		return keyErr("topology", "unknown latency topology %q (clients, %s)", p.Topology, TopologyMembers)
	}
	return p.ServerSet.validate()
}

func (latency) Params() Params { return &LatencyParams{} }

func (latency) Applies(s Shape) error {
	if len(s.Kinds) == 0 {
		return fmt.Errorf("latency does not apply to %s: it talks to no server", s.Backend)
	}
	return nil
}

func (latency) RandomParams(rng *rand.Rand, env *Env) Params {
	p := rng.IntN(max(1, len(env.Gates)))
	return &LatencyParams{ClientSet: ClientSet{Proc: Proc{Process: &p}}, Direction: "downstream",
		Latency: Duration(50+rng.IntN(450)) * Duration(time.Millisecond), Jitter: Duration(20 * time.Millisecond)}
}

func (latency) Start(ctx context.Context, env *Env, params Params, d time.Duration) (map[string]any, Healer, error) {
	t := params.(*LatencyParams)
	if t.Topology == TopologyMembers {
		return delayMembers(ctx, env, t, d)
	}
	dir := links.Downstream
	if t.Direction != "" {
		var err error
		if dir, err = links.ParseDirection(t.Direction); err != nil {
			return nil, nil, err
		}
	}
	servers, err := resolveServers(env, t.Servers)
	if err != nil {
		return nil, nil, err
	}
	if len(servers) == 0 {
		servers = env.Cluster.Servers()
	}
	clients := t.List()
	if len(clients) == 0 {
		clients = allClients(env)
	}
	ls, err := clientLinks(env, clients, servers)
	if err != nil {
		return nil, nil, err
	}
	lf := &linkFault{}
	for _, l := range ls {
		h, err := l.Delay(ctx, dir, t.Latency.D().Milliseconds(), t.Jitter.D().Milliseconds())
		if err != nil {
			_ = lf.heal(ctx)
			return nil, nil, err
		}
		lf.links, lf.handles = append(lf.links, l), append(lf.handles, h)
	}
	val := map[string]any{"clients": clients, "servers": serverLabels(env, servers), "direction": string(dir),
		"latency_ms": t.Latency.D().Milliseconds(), "jitter_ms": t.Jitter.D().Milliseconds(), "ms": d.Milliseconds()}
	heal := func(ctx context.Context) (map[string]any, error) {
		return map[string]any{"clients": clients, "servers": serverLabels(env, servers)}, lf.heal(ctx)
	}
	return val, heal, nil
}

// delayMembers delays the traffic between the named members and the other
// members of their ensemble.
func delayMembers(ctx context.Context, env *Env, t *LatencyParams, d time.Duration) (map[string]any, Healer, error) {
	dir, err := links.ParseDirection(t.Direction)
	if err != nil {
		return nil, nil, err
	}
	side, rest, leader, err := memberSides(ctx, env, t.Servers)
	if err != nil {
		return nil, nil, err
	}
	ls, err := memberLinks(env, side, rest, dir)
	if err != nil {
		return nil, nil, err
	}
	lf := &linkFault{}
	for _, dl := range ls {
		h, err := dl.link.Delay(ctx, dl.dir, t.Latency.D().Milliseconds(), t.Jitter.D().Milliseconds())
		if err != nil {
			_ = lf.heal(ctx)
			return nil, nil, err
		}
		lf.links, lf.handles = append(lf.links, dl.link), append(lf.handles, h)
	}
	between := cutMap(env, side, rest)
	val := map[string]any{"topology": TopologyMembers, "between": between, "direction": string(dir),
		"latency_ms": t.Latency.D().Milliseconds(), "jitter_ms": t.Jitter.D().Milliseconds(), "ms": d.Milliseconds()}
	if leader != "" {
		val["leader"] = leader
	}
	heal := func(ctx context.Context) (map[string]any, error) {
		return map[string]any{"topology": TopologyMembers, "between": between}, lf.heal(ctx)
	}
	return val, heal, nil
}
