package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/links"
)

// resolveServers finds the servers a target names: a server's name, or a
// letter for its place in start order ("A" is the first).
func resolveServers(env *Env, names []string) ([]cluster.Server, error) {
	all := env.Cluster.Servers()
	var out []cluster.Server
	for _, n := range names {
		s, err := findServer(all, n)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// resolveTargets is resolveServers where a name may also be `leader`:
// the member of the run's etcd or ZooKeeper that leads now. It also
// returns the leader's letter when `leader` was named ("" otherwise).
func resolveTargets(ctx context.Context, env *Env, names []string) (ss []cluster.Server, leader string, err error) {
	for _, n := range names {
		var s cluster.Server
		if n == leaderTarget {
			if s, err = env.Cluster.Leader(ctx); err != nil {
				return nil, "", fmt.Errorf("%w: servers [%s]: %w", ErrTarget, leaderTarget, err)
			}
			leader = letter(env, s)
		} else if s, err = findServer(env.Cluster.Servers(), n); err != nil {
			return nil, "", err
		}
		if !slices.ContainsFunc(ss, func(x cluster.Server) bool { return x.Name() == s.Name() }) {
			ss = append(ss, s)
		}
	}
	return ss, leader, nil
}

func findServer(all []cluster.Server, n string) (cluster.Server, error) {
	for _, s := range all {
		if s.Name() == n {
			return s, nil
		}
	}
	if len(n) == 1 {
		i := int(strings.ToUpper(n)[0]) - 'A'
		if i >= 0 && i < len(all) {
			return all[i], nil
		}
	}
	var known []string
	for i, s := range all {
		known = append(known, fmt.Sprintf("%c=%s", 'A'+i, s.Name()))
	}
	return nil, fmt.Errorf("%w: no server %q (servers: %s)", ErrTarget, n, strings.Join(known, ", "))
}

// letter is a server's letter in start order, for readable history values.
func letter(env *Env, s cluster.Server) string { return env.Cluster.Label(s) }

// serverLabels names servers as "A (redis-0)".
func serverLabels(env *Env, ss []cluster.Server) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = letter(env, s)
	}
	return out
}

// randomServers picks k distinct servers (as letters) at random, sorted.
func randomServers(rng *rand.Rand, env *Env, k int) []string {
	n := len(env.Cluster.Servers())
	if n == 0 {
		return nil
	}
	k = min(k, n)
	perm := rng.Perm(n)[:k]
	sort.Ints(perm)
	out := make([]string, k)
	for i, p := range perm {
		out[i] = string(rune('A' + p))
	}
	return out
}

// linkFault applies one action to a set of links and heals them together.
type linkFault struct {
	links   []*links.Link
	handles []string
}

func (lf *linkFault) heal(ctx context.Context) error {
	var first error
	for i, l := range lf.links {
		if err := l.Heal(ctx, lf.handles[i]); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// clientLinks returns the links from each client to each server.
func clientLinks(env *Env, clients []int, servers []cluster.Server) ([]*links.Link, error) {
	var out []*links.Link
	for _, p := range clients {
		for _, s := range servers {
			l, err := env.Cluster.Link(links.ClientName(p), s)
			if err != nil {
				return nil, err
			}
			if l == nil {
				return nil, fmt.Errorf("%w: links are not enabled", ErrTarget)
			}
			out = append(out, l)
		}
	}
	return out, nil
}

func allClients(env *Env) []int {
	out := make([]int, len(env.Gates))
	for i := range out {
		out[i] = i
	}
	return out
}

func hasKind(kinds []string, k string) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

// anyKind reports whether one of kinds is a registered kind of server that
// can do what can asks of it (the registry says: cluster.SessionEnder...).
func anyKind(kinds []string, can func(cluster.Kind) bool) bool {
	for _, name := range kinds {
		if k, ok := cluster.LookupKind(name); ok && can(k) {
			return true
		}
	}
	return false
}
