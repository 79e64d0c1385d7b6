package backends

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/cluster"
	rediskind "github.com/locktorture/locktorture/cluster/kinds/redis"
	"github.com/locktorture/locktorture/history"
)

// redlock is our own Redlock, per antirez's description of the algorithm
// (redis.io, "Distributed Locks with Redis"), over 5 independent
// redis-servers with no replication between them. One acquire sets the key
// with SET NX PX and a random token on all 5 at once, each request with a
// small timeout of its own (min(op timeout, TTL/10), at least 10ms); it
// succeeds when a majority (3) said yes and the validity — TTL, less the
// time the acquire took by the client's own clock, less a drift allowance
// of TTL×1% + 2ms — is still positive. Otherwise it releases on every node
// and fails. The grant's lease is that validity. Release is a
// compare-and-delete on all 5; it counts when a majority deleted. There are
// no retries inside an acquire: the workload's think time is the random
// retry delay. No extension: a grant lasts its validity.
//
// What it guarantees: mutual exclusion while fewer than 3 nodes fail or
// lose keys, and while the timing assumptions hold — bounded network delay,
// bounded process pauses and clocks (the client's and the servers') that
// run at about the same rate. A majority of the 5 may be down or
// unreachable for others without stopping it (2 of 5 down: still grants).
// What it does not (Kleppmann, "How to do distributed locking"): nothing
// protects a holder that pauses or whose replies are delayed past the
// validity — it acts on a lock that has expired; a server whose clock jumps
// forward, or that restarts without persistence, can hand a key to a second
// client, and two majorities that share such a node grant the lock twice.
// It is a lease, not a fence: there is no fencing token, so a resource
// cannot tell a stale holder's writes from the current one's.
func init() {
	Register(Info{
		Name:        "redlock",
		Description: "our own Redlock over 5 independent Redis servers: quorum, drift factor, validity check",
		Servers:     "5 redis-server",
		Kinds:       []string{"redis"},
		Counts:      map[string]int{"redis": redlockNodes},
		Lease:       true,
	}, newRedlock)
}

// redlockNodes is the number of independent servers of the Redlock family.
const redlockNodes = 5

// errNoQuorum is returned (certain) when every node answered and fewer
// than a majority granted, none because it was busy.
var errNoQuorum = errors.New("redlock: no quorum")

// startRedisNodes starts n independent redis-servers, named redis-a,
// redis-b, ... (the targets of server faults A, B, ..., in order), with
// persistence when the scenario asks for it.
func startRedisNodes(ctx context.Context, env Env, n int) ([]*rediskind.Redis, error) {
	out := make([]*rediskind.Redis, 0, n)
	for i := range n {
		r, err := rediskind.Start(ctx, env.Cluster, rediskind.Options{Name: "redis-" + string(rune('a'+i)), Persistence: env.Servers.Persistence})
		if err != nil {
			return nil, fmt.Errorf("backends: %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}

type redlock struct {
	servers []*rediskind.Redis
	env     Env
}

func newRedlock(ctx context.Context, env Env) (Backend, error) {
	s, err := startRedisNodes(ctx, env, redlockNodes)
	if err != nil {
		return nil, err
	}
	return &redlock{servers: s, env: env}, nil
}

func (b *redlock) Client(ctx context.Context, c ClientEnv) (Client, error) {
	addrs := make([]string, len(b.servers))
	auths := make([]*cluster.Auth, len(b.servers))
	for i, s := range b.servers {
		// Each server its own credentials (five managed Redis may differ).
		addrs[i], auths[i] = b.env.Cluster.ClientAddr(c.Process, s), cluster.AuthOf(s).WithServerName(s.Addr())
	}
	rc := newRedlockClient(addrs, auths, b.env.TTL, b.env.OpTimeout, c.Clock, rediskind.ClientName(c.Process))
	connect(ctx, b.env.OpTimeout, rc.nodes...)
	for _, s := range b.servers {
		rc.labels = append(rc.labels, b.env.Cluster.Label(s))
	}
	return rc, nil
}

func (b *redlock) Close() error { return nil }

// redlockNodeTimeout is the per-node timeout: small against the TTL, so a
// slow node costs little of the validity.
func redlockNodeTimeout(ttl, opTimeout time.Duration) time.Duration {
	return min(opTimeout, max(ttl/10, 10*time.Millisecond))
}

type redlockClient struct {
	nodes       []*redis.Client
	keys        redisKeys
	ttl         time.Duration
	drift       time.Duration
	nodeTimeout time.Duration
	quorum      int
	clock       *clientfault.Clock
	// labels name the nodes (A..E) for the grants' record.
	labels []string
}

func newRedlockClient(addrs []string, auths []*cluster.Auth, ttl, opTimeout time.Duration, clock *clientfault.Clock, name string) *redlockClient {
	c := &redlockClient{
		keys:        defaultRedisKeys,
		ttl:         ttl,
		drift:       ttl/100 + 2*time.Millisecond,
		nodeTimeout: redlockNodeTimeout(ttl, opTimeout),
		quorum:      len(addrs)/2 + 1,
		clock:       clock,
	}
	for i, a := range addrs {
		var auth *cluster.Auth
		if i < len(auths) {
			auth = auths[i]
		}
		c.nodes = append(c.nodes, newRedisClient(a, auth, opTimeout, name))
	}
	return c
}

// nodeResult is what one node said.
type nodeResult int

const (
	nodeYes     nodeResult = iota // locked / deleted
	nodeNo                        // busy / not ours: certain
	nodeDown                      // refused: certainly not done
	nodeUnknown                   // timeout, lost connection: may have happened
)

func classify(err error) nodeResult {
	switch {
	case err == nil:
		return nodeYes
	case errors.Is(err, ErrBusy), errors.Is(err, ErrNotHeld):
		return nodeNo
	case Outcome(err) == history.Fail:
		return nodeDown
	}
	return nodeUnknown
}

// tally counts the results of one round over the nodes.
type tally struct {
	n    [4]int
	errs []string
}

func (t tally) certain() bool { return t.n[nodeUnknown] == 0 }

func (t tally) String() string {
	s := fmt.Sprintf("%d yes, %d no, %d down, %d unknown", t.n[nodeYes], t.n[nodeNo], t.n[nodeDown], t.n[nodeUnknown])
	if len(t.errs) > 0 {
		s += " (" + strings.Join(t.errs, "; ") + ")"
	}
	return s
}

// each runs f on every node at once, each under the per-node timeout, and
// tallies the answers.
func (c *redlockClient) each(ctx context.Context, f func(ctx context.Context, rc *redis.Client) error) (tally, []nodeResult) {
	type answer struct {
		i   int
		err error
	}
	ch := make(chan answer, len(c.nodes))
	for i, rc := range c.nodes {
		go func() {
			nctx, cancel := context.WithTimeout(ctx, c.nodeTimeout)
			defer cancel()
			ch <- answer{i, f(nctx, rc)}
		}()
	}
	var t tally
	res := make([]nodeResult, len(c.nodes))
	for range c.nodes {
		a := <-ch
		r := classify(a.err)
		res[a.i] = r
		t.n[r]++
		if r == nodeDown || r == nodeUnknown {
			t.errs = append(t.errs, fmt.Sprintf("node %c: %v", 'a'+a.i, a.err))
		}
	}
	return t, res
}

func (c *redlockClient) Acquire(ctx context.Context, key string) (Grant, error) {
	token := randomToken()
	start := c.clock.Now()
	got, res := c.each(ctx, func(ctx context.Context, rc *redis.Client) error {
		return c.keys.setNX(ctx, rc, key, token, c.ttl)
	})
	validity := c.ttl - c.clock.Since(start) - c.drift
	if got.n[nodeYes] >= c.quorum && validity > 0 {
		var granted []string
		for i, r := range res {
			if r == nodeYes && i < len(c.labels) {
				granted = append(granted, c.labels[i])
			}
		}
		return Grant{Lease: validity, HasLease: true, Token: token, Nodes: granted}, nil
	}
	// Failed: unlock everywhere, even where the node said no or did not
	// answer (a timed-out SET may have landed). The cleanup runs even when
	// the caller's deadline has passed.
	un, _ := c.each(context.WithoutCancel(ctx), func(ctx context.Context, rc *redis.Client) error {
		return c.keys.release(ctx, rc, key, token)
	})
	if got.n[nodeYes] >= c.quorum {
		err := fmt.Errorf("redlock: acquire %s: %d of %d locked, but the acquire took %s of the %s ttl (drift %s): no validity left; unlocked: %s",
			key, got.n[nodeYes], len(c.nodes), c.ttl-c.drift-validity, c.ttl, c.drift, un)
		if got.certain() && un.certain() {
			return Grant{}, Certain(err)
		}
		return Grant{}, err
	}
	detail := fmt.Sprintf("redlock: acquire %s: %s, quorum %d", key, got, c.quorum)
	switch {
	case !got.certain():
		// A node that did not answer may hold our token: unknown.
		return Grant{}, errors.New(detail)
	case got.n[nodeNo] > 0:
		return Grant{}, fmt.Errorf("%w: %s", ErrBusy, detail)
	}
	return Grant{}, Certain(fmt.Errorf("%w: %s", errNoQuorum, detail))
}

func (c *redlockClient) Release(ctx context.Context, key string, g Grant) error {
	t, _ := c.each(ctx, func(ctx context.Context, rc *redis.Client) error {
		return c.keys.release(ctx, rc, key, g.Token)
	})
	if t.n[nodeYes] >= c.quorum {
		return nil
	}
	detail := fmt.Sprintf("redlock: release %s: %s, quorum %d", key, t, c.quorum)
	if t.certain() {
		return fmt.Errorf("%w: %s", ErrNotHeld, detail)
	}
	return errors.New(detail)
}

func (c *redlockClient) Close() error {
	var errs []error
	for _, rc := range c.nodes {
		errs = append(errs, rc.Close())
	}
	return errors.Join(errs...)
}
