package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/locktorture/locktorture/cluster/links"
)

// EnableLinks makes every later ClientAddr go through a link of its own
// (client, server) pair. Call it before any client dials.
func (c *Cluster) EnableLinks() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.links == nil {
		c.links = links.NewSet(c.Provider().HarnessHost())
	}
}

// LinksEnabled reports whether client traffic goes through links.
func (c *Cluster) LinksEnabled() bool { return c.linkSet() != nil }

// linkSet is the cluster's links, nil when not enabled.
func (c *Cluster) linkSet() *links.Set {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.links
}

// ClientAddr is the address client process p dials to reach server s. With
// links enabled it is the link of the (p, s) pair, made on first use;
// otherwise it is s.Addr().
func (c *Cluster) ClientAddr(p int, s Server) string {
	l, err := c.Link(links.ClientName(p), s)
	if err != nil || l == nil {
		return s.Addr()
	}
	return l.Addr()
}

// ClientServers is what client process p dials: by kind, the address of
// its own link to every server (a ClientAddresser's client address, such
// as PostgreSQL's DSN), and the companions of the groups kept (a Sentinel
// group's Sentinels: Companioned); Aliases map each server's real
// address to p's link. For p < 0 the addresses are
// the servers' own (no link), as a servers file would name them.
func (c *Cluster) ClientServers(p int) ServerSet {
	g := ServerSet{Aliases: map[string]string{}, Auth: AuthSet{}}
	addr := func(s Server) string {
		if p < 0 {
			return s.Addr()
		}
		return c.ClientAddr(p, s)
	}
	for _, s := range c.Servers() {
		a := addr(s)
		g.Aliases[s.Addr()] = a
		if ca, ok := s.(ClientAddresser); ok {
			a = ca.ClientAddress(a, p)
		}
		kind := kindOf(s)
		if kind == "" {
			kind = nameKind(s.Name())
		}
		g.add(kind, a)
		// The client dials a, maybe a link: its TLS checks the server's
		// own name.
		g.Auth.Add(kind, AuthOf(s).WithServerName(s.Addr()))
	}
	for _, cg := range c.keptGroups() {
		if cg, ok := cg.(Companioned); ok {
			cg.ClientCompanions(&g, func(s Server) string {
				a := addr(s)
				g.Aliases[s.Addr()] = a
				return a
			})
		}
	}
	g.Auth = g.Auth.compact()
	return g
}

// nameKind is the kind in a server's name: "zookeeper" in "zookeeper-1"
// (a server of no registered kind).
func nameKind(name string) string {
	if i := strings.IndexAny(name, "-_0123456789"); i > 0 {
		return name[:i]
	}
	return name
}

// Link returns the link from (a client or server named) from to server s,
// making it on first use; nil when links are not enabled.
func (c *Cluster) Link(from string, s Server) (*links.Link, error) {
	ls := c.linkSet()
	if ls == nil {
		return nil, nil
	}
	l, err := ls.Get(from+"->"+s.Name(), from, s, s.Addr())
	if errors.Is(err, links.ErrClosed) {
		err = fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return l, err
}

// LinkRemarks are what the cluster had to do to its links beyond the
// faults asked of them (links.Set.Remarks): a run logs them and notes
// them in its results. None when links are not enabled.
func (c *Cluster) LinkRemarks() []string {
	if ls := c.linkSet(); ls != nil {
		return ls.Remarks()
	}
	return nil
}

// closeLinks stops every proxy: no listener is left.
func (c *Cluster) closeLinks() {
	if ls := c.linkSet(); ls != nil {
		ls.Close()
	}
}

// PeerLink returns the link that carries member from's traffic to to's
// port named port (upstream is that port's address), made on first use
// where servers can dial it; nil when links are not enabled.
func (c *Cluster) PeerLink(from, to Server, port, upstream string) (*links.Link, error) {
	ls := c.linkSet()
	if ls == nil {
		return nil, nil
	}
	return ls.Patient(from.Name()+"->"+to.Name()+"/"+port, from.Name(), to, upstream)
}

// DropLinks stops links made for servers that did not start.
func (c *Cluster) DropLinks(made []*links.Link) {
	if ls := c.linkSet(); ls != nil {
		ls.Drop(made)
	}
}

// PeerLinks returns the links that carry server from's traffic to server
// to, both members of one ensemble whose members dial one another through
// links: a ZooKeeper ensemble of more than one member started by this
// cluster with links enabled (its quorum and election links of the pair
// in that direction). Cutting both directions of a pair cuts everything
// between the two. Nil otherwise: etcd members cannot be given per-member
// views of one another (a member's id is a hash of its peer URLs, which
// every member must agree on, and peers dial the URLs the cluster's
// membership records).
func (c *Cluster) PeerLinks(from, to Server) []*links.Link {
	for _, g := range c.keptGroups() {
		if p, ok := g.(Peered); ok {
			if ls := p.PeerLinks(from.Name(), to.Name()); ls != nil {
				return ls
			}
		}
	}
	return nil
}

// Peers returns the servers whose traffic to one another goes through
// links (see PeerLinks), in start order; none when there are none.
func (c *Cluster) Peers() []Server {
	for _, g := range c.keptGroups() {
		if p, ok := g.(Peered); ok {
			if ps := p.Peers(); len(ps) > 0 {
				return ps
			}
		}
	}
	return nil
}

// Peered is a group of servers (Group) whose members dial one another
// through links of their own (Cluster.PeerLinks, Cluster.Peers).
type Peered interface {
	// PeerLinks are the links that carry member from's traffic to member
	// to (by their names); nil when none do.
	PeerLinks(from, to string) []*links.Link
	// Peers are the members whose traffic to one another goes through
	// links, in start order; none when there are none.
	Peers() []Server
}

// Leader returns the member that leads the run's replicated ensemble: its
// etcd cluster's raft leader (each member's maintenance status names it)
// or its ZooKeeper ensemble's leader (each member says its mode), the
// only member of a one-member one. An error when the run has neither, or
// when no member answers with a leader (an election under way).
func (c *Cluster) Leader(ctx context.Context) (Server, error) {
	var leading []Leading
	for _, g := range c.keptGroups() {
		if l, ok := g.(Leading); ok {
			leading = append(leading, l)
		}
	}
	switch len(leading) {
	case 0:
		return nil, errors.New("cluster: the run has no ensemble with a leader (etcd or ZooKeeper)")
	case 1:
		return leading[0].LeaderServer(ctx)
	}
	return nil, errors.New("cluster: the run has both etcd and ZooKeeper: which leader is meant is not said")
}
