package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// lostReply loses a reply: the target clients' links to every server are
// armed so that the next reply on each connection is dropped and the
// connection closed, until healed (keep it short: a connection made while
// armed loses its first reply too). With once, only the first reply from
// each server is lost, so the fault may last a while: it catches the
// reply to the client's next request (a release, when it strikes on a
// write) and nothing after it. The server has done what the client
// asked — taken or freed the lock — but the client never hears it, and
// what its library does next (a retry, a reconnect, nothing) decides
// whether a lock is left that nobody knows it holds.
type lostReply struct{}

func init() {
	register(Info{
		Name:        "lost-reply",
		Description: "the next reply to the target clients is lost and their connections cut: the server acted, the client never heard",
		AppliesTo:   "backends with servers",
	}, lostReply{})
}

func (lostReply) UsesLinks() bool { return true }

// LostReplyParams are lost-reply's: the clients whose replies are lost
// (none: every client's), and whether only one reply from each server is.
type LostReplyParams struct {
	ClientSet `yaml:",inline"`
	// Once loses only the first reply each server sends a target client
	// while the fault lasts (on whichever of its connections); the
	// replies after it pass. Without it, the first reply on every
	// connection, old or made while armed, is lost.
	Once bool `yaml:"once,omitempty"`
}

// String is "process 1", or "process 1 once".
func (p *LostReplyParams) String() string {
	if p.Once {
		return strings.TrimSpace(p.words() + " once")
	}
	return p.words()
}

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
	p := params.(*LostReplyParams)
	clients := p.List()
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
		lose := l.LoseReply
		if p.Once {
			lose = l.LoseOneReply
		}
		h, err := lose(ctx)
		if err != nil {
			_ = lf.heal(ctx)
			return nil, nil, err
		}
		lf.links, lf.handles = append(lf.links, l), append(lf.handles, h)
	}
	val := map[string]any{"clients": clients, "servers": serverLabels(env, servers), "ms": d.Milliseconds()}
	if p.Once {
		val["once"] = true
	}
	heal := func(ctx context.Context) (map[string]any, error) {
		return map[string]any{"clients": clients}, lf.heal(ctx)
	}
	return val, heal, nil
}
