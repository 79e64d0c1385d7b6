package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
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

// linksEnabled reports whether client traffic goes through links.
func (c *Cluster) linksEnabled() bool { return c.linkSet() != nil }

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
// as PostgreSQL's DSN), and the Sentinel group's Sentinels; Aliases map
// each server's real address to p's link. For p < 0 the addresses are
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
		g.Auth.add(kind, AuthOf(s).WithServerName(s.Addr()))
	}
	if sg := c.SentinelGroup(); sg != nil {
		g.Sentinel = &SentinelSet{Master: sg.MasterName(), MasterAuth: sg.MasterAuth}
		for _, s := range sg.Sentinels {
			a := addr(s)
			g.Aliases[s.Addr()] = a
			g.Sentinel.Addrs = append(g.Sentinel.Addrs, a)
			g.Auth.add(sentinelKind, s.auth.WithServerName(s.Addr()))
		}
		if len(g.Auth[redisKind]) == 0 && sg.MasterAuth != nil {
			g.Auth.add(redisKind, sg.MasterAuth)
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

// closeLinks stops every proxy: no listener is left.
func (c *Cluster) closeLinks() {
	if ls := c.linkSet(); ls != nil {
		ls.Close()
	}
}

// peerLink returns the link that carries member from's traffic to to's
// port named port (upstream is that port's address), made on first use
// where servers can dial it; nil when links are not enabled.
func (c *Cluster) peerLink(from, to Server, port, upstream string) (*links.Link, error) {
	ls := c.linkSet()
	if ls == nil {
		return nil, nil
	}
	return ls.Patient(from.Name()+"->"+to.Name()+"/"+port, from.Name(), to, upstream)
}

// dropLinks stops links made for servers that did not start.
func (c *Cluster) dropLinks(made []*links.Link) {
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
	c.zk.mu.Lock()
	z := c.zk.z
	c.zk.mu.Unlock()
	if z == nil {
		return nil
	}
	return z.peers[from.Name()+"->"+to.Name()]
}

// Peers returns the servers whose traffic to one another goes through
// links (see PeerLinks), in start order; none when there are none.
func (c *Cluster) Peers() []Server {
	c.zk.mu.Lock()
	z := c.zk.z
	c.zk.mu.Unlock()
	if z == nil || len(z.peers) == 0 {
		return nil
	}
	return z.memberServers()
}

// zookeeperPeerLinks makes the links between the members of z (before
// they start: each member's zoo.cfg names the others at its links' address)
// and sets each member's view of the others; nothing without links or with
// one member. On an error, the links made are stopped.
func (c *Cluster) zookeeperPeerLinks(z *ZooKeeper) error {
	if len(z.members) < 2 || !c.linksEnabled() {
		return nil
	}
	z.peers = map[string][]*links.Link{}
	var made []*links.Link
	fail := func(err error) error {
		c.dropLinks(made)
		z.peers = nil
		for _, m := range z.members {
			m.via = nil
		}
		return err
	}
	election := map[string]*links.Link{}
	for _, m := range z.members {
		m.via = map[int]string{}
		for _, o := range z.members {
			if o == m {
				continue
			}
			q, err := c.peerLink(m, o, "quorum", o.quorumAddr())
			if err != nil {
				return fail(err)
			}
			made = append(made, q)
			e, err := c.peerLink(m, o, "election", o.electionAddr())
			if err != nil {
				return fail(err)
			}
			made = append(made, e)
			qh, qp, err := net.SplitHostPort(q.Addr())
			if err != nil {
				return fail(err)
			}
			_, ep, err := net.SplitHostPort(e.Addr())
			if err != nil {
				return fail(err)
			}
			m.via[o.id] = fmt.Sprintf("%s:%s:%s", qh, qp, ep)
			z.peers[m.name+"->"+o.name] = []*links.Link{q, e}
			election[m.name+"->"+o.name] = e
		}
	}
	// Each election link i->j tells j to dial i back at the link j->i.
	for key, e := range election {
		from, to, _ := strings.Cut(key, "->")
		back := election[to+"->"+from]
		if err := e.RedirectElection(back.Addr()); err != nil {
			return fail(fmt.Errorf("cluster: %w", err))
		}
	}
	return nil
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
	c.zk.mu.Lock()
	if z := c.zk.z; z != nil {
		leading = append(leading, zkLeading{z})
	}
	c.zk.mu.Unlock()
	switch len(leading) {
	case 0:
		return nil, errors.New("cluster: the run has no ensemble with a leader (etcd or ZooKeeper)")
	case 1:
		return leading[0].LeaderServer(ctx)
	}
	return nil, errors.New("cluster: the run has both etcd and ZooKeeper: which leader is meant is not said")
}

// zkLeading is the ZooKeeper ensemble as a Leading group.
type zkLeading struct{ z *ZooKeeper }

// LeaderServer is the ensemble's leader.
func (l zkLeading) LeaderServer(ctx context.Context) (Server, error) {
	m, err := l.z.Leader(ctx)
	if err != nil {
		return nil, err
	}
	return m, nil
}
