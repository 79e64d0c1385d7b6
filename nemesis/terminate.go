package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/locktorture/locktorture/cluster/kinds/postgres"
)

// terminate has PostgreSQL kill a lock holder's session
// (pg_terminate_backend), as an operator, a pooler or an idle-session
// timeout would: every lock the session held is released at once, while
// the client may still believe it holds them. With a target process it
// ends that client's sessions; without, every client session that holds an
// advisory or row lock. Recorded as one `terminate` op naming the sessions.
type terminate struct{}

func init() {
	register(Info{
		Name:        "terminate",
		Description: "PostgreSQL terminates the lock holder's session (pg_terminate_backend)",
		AppliesTo:   "PostgreSQL backends",
	}, terminate{})
}

func (terminate) OpNames(string) (string, string) { return "terminate", "" }

func (terminate) AllowsZeroDuration() bool { return true }

// TerminateParams are terminate's: the clients whose sessions to end
// (none: every client session that holds a lock).
type TerminateParams struct {
	ClientSet `yaml:",inline"`
}

func (p *TerminateParams) String() string { return p.words() }

// Validate checks the clients.
func (p *TerminateParams) Validate(s Shape) error { return p.validate(s.Clients) }

func (terminate) Params() Params { return &TerminateParams{} }

func (terminate) Applies(s Shape) error {
	if !hasKind(s.Kinds, postgres.Kind) {
		return fmt.Errorf("terminate does not apply to %s: it has no PostgreSQL session", s.Backend)
	}
	return nil
}

// Idle says why a terminate found no session to end.
func (terminate) Idle(val map[string]any) string { return sessionsIdle(val) }

func (terminate) RandomParams(rng *rand.Rand, env *Env) Params { return &TerminateParams{} }

func (terminate) Start(ctx context.Context, env *Env, params Params, d time.Duration) (map[string]any, Healer, error) {
	clients := params.(*TerminateParams).List()
	var pg *postgres.Postgres
	for _, s := range env.Cluster.Servers() {
		if p, ok := s.(*postgres.Postgres); ok {
			pg = p
		}
	}
	if pg == nil {
		return nil, nil, fmt.Errorf("%w: terminate needs a PostgreSQL server", ErrTarget)
	}
	sessions, err := pg.KillSessions(ctx, clients)
	if err != nil {
		return nil, nil, err
	}
	val := map[string]any{"sessions": sessions}
	if len(clients) > 0 {
		val["clients"] = clients
	}
	heal := func(ctx context.Context) (map[string]any, error) { return nil, nil }
	return val, heal, nil
}
