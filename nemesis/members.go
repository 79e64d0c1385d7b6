package nemesis

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/zookeeper"
	"github.com/locktorture/locktorture/cluster/links"
)

// The members topology of partition and latency acts on the links
// between the members of an ensemble (server to server), not on clients'
// links: `servers:` names one side (a letter, a name, or `leader` for the
// member that leads when the fault starts), the other members are the
// other side. Direction both (the default) acts on everything between the
// sides; upstream on what the named members send to the others, downstream
// on what they receive from them.

// TopologyMembers names the topology.
const TopologyMembers = "members"

// leaderTarget names, in `servers:` of the members topology and of the
// faults done to whole servers (kill, server-pause), the member that
// leads when the fault starts (etcd's raft leader, ZooKeeper's).
const leaderTarget = "leader"

// validateMembers checks a members topology against the run: servers
// named, no `clients:`, an ensemble whose members talk through links.
func validateMembers(s Shape, fault string, servers []string, clients []int) error {
	if len(servers) == 0 {
		return keyErr("servers", "topology members needs `servers:` (the members to cut off from the others: letters, names, or %s)", leaderTarget)
	}
	if len(clients) > 0 {
		return keyErr("clients", "topology members acts on the links between servers, not on clients' links: no `clients:` (a `process:` only picks whose `on:` event fires the step)")
	}
	if s.External {
		return keyErr("topology", "%s (topology members) needs servers the harness runs: someone else's members talk to one another over their own network, not through links (servers: external)", fault)
	}
	for _, name := range s.Kinds {
		k, _ := cluster.LookupKind(name)
		if u, ok := k.Abilities.(cluster.MembersUnlinked); ok && u.MembersUnlinked() != "" {
			return keyErr("topology", "%s (topology members) does not apply to %s: %s", fault, name, u.MembersUnlinked())
		}
	}
	if s.Members < 2 {
		this := "this run's servers: none"
		switch {
		case slices.Contains(s.Kinds, zookeeper.Kind):
			this = "this run's ZooKeeper has one member"
		case len(s.Kinds) > 0:
			this = "this run's servers: " + strings.Join(s.Kinds, ", ")
		}
		return keyErr("topology", "%s (topology members) needs an ensemble whose members talk to one another: zookeeper with zookeeper: {members: 3} (%s)", fault, this)
	}
	for _, n := range servers {
		if strings.TrimSpace(n) == "" {
			return keyErr("servers", "empty server name")
		}
	}
	return nil
}

// memberNames are the servers a step names that exist before the run (all
// but `leader`, found when the fault starts), for CheckSteps.
func memberNames(servers []string) []string {
	var out []string
	for _, n := range servers {
		if n != leaderTarget {
			out = append(out, n)
		}
	}
	return out
}

// memberSides resolves the named members (`leader`: the leader now) and
// the others. It also returns the letter of the leader when `leader` was
// named ("" otherwise).
func memberSides(ctx context.Context, env *Env, names []string) (side, rest []cluster.Server, leader string, err error) {
	peers := env.Cluster.Peers()
	if len(peers) == 0 {
		return nil, nil, "", fmt.Errorf("%w: no ensemble whose members talk to one another through links", ErrTarget)
	}
	if side, leader, err = resolveTargets(ctx, env, names); err != nil {
		return nil, nil, "", err
	}
	for _, s := range side {
		if !slices.ContainsFunc(peers, func(p cluster.Server) bool { return p.Name() == s.Name() }) {
			return nil, nil, "", fmt.Errorf("%w: %s (%s) is not a member of the ensemble (%s)", ErrTarget, letter(env, s), s.Name(), strings.Join(serverLabels(env, peers), ", "))
		}
	}
	for _, p := range peers {
		if !slices.ContainsFunc(side, func(s cluster.Server) bool { return s.Name() == p.Name() }) {
			rest = append(rest, p)
		}
	}
	if len(rest) == 0 {
		return nil, nil, "", fmt.Errorf("%w: servers %v name every member: the members topology needs some on the other side", ErrTarget, serverLabels(env, side))
	}
	return side, rest, leader, nil
}

// dirLink is one link and the direction to act on it.
type dirLink struct {
	link *links.Link
	dir  links.Direction
}

// memberLinks returns every link between side and rest, each with the
// direction that carries what dir names: both; upstream, what side sends
// to rest; downstream, what side receives from rest. A link from a to b
// carries the connections a opened: its upstream is what a sends.
func memberLinks(env *Env, side, rest []cluster.Server, dir links.Direction) ([]dirLink, error) {
	flip := map[links.Direction]links.Direction{links.BothWays: links.BothWays, links.Upstream: links.Downstream, links.Downstream: links.Upstream}
	var out []dirLink
	for _, a := range side {
		for _, b := range rest {
			out1, out2 := env.Cluster.PeerLinks(a, b), env.Cluster.PeerLinks(b, a)
			if len(out1) == 0 || len(out2) == 0 {
				return nil, fmt.Errorf("%w: %s and %s do not talk to each other through links", ErrTarget, letter(env, a), letter(env, b))
			}
			for _, l := range out1 {
				out = append(out, dirLink{l, dir})
			}
			for _, l := range out2 {
				out = append(out, dirLink{l, flip[dir]})
			}
		}
	}
	return out, nil
}

// cutMap records which members were cut from which: each named member's
// letter to the others' letters.
func cutMap(env *Env, side, rest []cluster.Server) map[string][]string {
	out := map[string][]string{}
	for _, a := range side {
		out[letter(env, a)] = serverLabels(env, rest)
	}
	return out
}
