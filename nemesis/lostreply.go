package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// lostReply loses a reply: the target clients' links to every server are
// armed so that the next reply on each connection is dropped and the
// connection closed, until healed (keep it short: a connection made while
// armed loses its first reply too). The server has done what the client
// asked — taken or freed the lock — but the client never hears it, and
// what its library does next (a retry, a reconnect, nothing) decides
// whether a lock is left that nobody knows it holds.
type lostReply struct{}

func init() {
	Register(Info{
		Name:        "lost-reply",
		Description: "the next reply to the target clients is lost and their connections cut: the server acted, the client never heard",
		AppliesTo:   "backends with servers",
	}, lostReply{})
}

func (lostReply) UsesLinks() bool { return true }

// LostReplyParams are lost-reply's: the clients whose replies are lost
// (none: every client's).
type LostReplyParams struct {
	ClientSet `yaml:",inline"`
}

func (p *LostReplyParams) String() string { return p.words() }

// Validate checks the clients.
func (p *LostReplyParams) Validate(s Shape) error { return p.validate(s.Clients) }

func (lostReply) Params() Params { return &LostReplyParams{} }

func (lostReply) Applies(s Shape) error {
	if len(s.Kinds) == 0 {
		return fmt.Errorf("lost-reply does not apply to %s: it talks to no server", s.Backend)
	}
	return nil
}

func (lostReply) RandomParams(rng *rand.Rand, env *Env) Params {
	p := rng.IntN(max(1, len(env.Gates)))
	return &LostReplyParams{ClientSet: ClientSet{Proc: Proc{Process: &p}}}
}

func (lostReply) Start(ctx context.Context, env *Env, params Params, d time.Duration) (map[string]any, Healer, error) {
	clients := params.(*LostReplyParams).List()
	if len(clients) == 0 {
		clients = allClients(env)
	}
	servers := env.Cluster.Servers()
	ls, err := clientLinks(env, clients, servers)
	if err != nil {
		return nil, nil, err
	}
	lf := &linkFault{}
	for _, l := range ls {
		h, err := l.LoseReply(ctx)
		if err != nil {
			_ = lf.heal(ctx)
			return nil, nil, err
		}
		lf.links, lf.handles = append(lf.links, l), append(lf.handles, h)
	}
	val := map[string]any{"clients": clients, "servers": serverLabels(env, servers), "ms": d.Milliseconds()}
	heal := func(ctx context.Context) (map[string]any, error) {
		return map[string]any{"clients": clients}, lf.heal(ctx)
	}
	return val, heal, nil
}
