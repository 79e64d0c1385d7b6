package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/locktorture/locktorture/cluster"
)

// killSession has the servers end client sessions, as an operator, a
// pooler or a server-side timeout would: PostgreSQL terminates the
// session (its locks go with it), MariaDB kills the connection (KILL
// CONNECTION: its GET_LOCK locks go with it, its transaction rolls back),
// Redis closes the connection (CLIENT KILL; the lock is a key and stays
// until its TTL), etcd revokes the holder's session lease (its lock key
// goes with it), ZooKeeper closes the holder's session (reattached to with
// its id and the password the server derives from it; its ephemeral lock
// node goes with it).
// Recorded as one `kill-session` op naming what was ended.
type killSession struct{}

func init() {
	register(Info{
		Name:        "kill-session",
		Description: "the servers end the holder's session: PostgreSQL terminate, MariaDB KILL CONNECTION, Redis CLIENT KILL, etcd lease revoke, ZooKeeper session close",
		AppliesTo:   "PostgreSQL, MariaDB, Redis, etcd and ZooKeeper backends",
	}, killSession{})
}

func (killSession) OpNames(string) (string, string) { return "kill-session", "" }

func (killSession) AllowsZeroDuration() bool { return true }

// Params are terminate's: the clients whose sessions to end (none: every
// session holding a lock; etcd and ZooKeeper always end the holders').
func (killSession) Params() Params { return &TerminateParams{} }

func (killSession) Applies(s Shape) error {
	if anyKind(s.Kinds, func(k cluster.Kind) bool {
		e, ok := k.Abilities.(cluster.SessionEnder)
		return ok && e.EndsSessions()
	}) {
		return s.controlled("kill-session")
	}
	return fmt.Errorf("kill-session does not apply to %s: it has no server session", s.Backend)
}

// Idle says why a kill found no session to end.
func (killSession) Idle(val map[string]any) string { return sessionsIdle(val) }

func (killSession) RandomParams(rng *rand.Rand, env *Env) Params { return &TerminateParams{} }

func (killSession) Start(ctx context.Context, env *Env, params Params, d time.Duration) (map[string]any, Healer, error) {
	clients := params.(*TerminateParams).List()
	killers := env.Cluster.SessionKillers()
	if len(killers) == 0 {
		return nil, nil, fmt.Errorf("%w: kill-session needs a PostgreSQL, MariaDB, Redis, etcd or ZooKeeper server", ErrTarget)
	}
	sessions := []map[string]any{}
	var errs []error
	for _, k := range killers {
		s, err := k.KillSessions(ctx, clients)
		sessions = append(sessions, s...)
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, fmt.Errorf("kill-session: %w", err)
	}
	val := map[string]any{"sessions": sessions}
	if len(clients) > 0 {
		val["clients"] = clients
	}
	return val, func(context.Context) (map[string]any, error) { return nil, nil }, nil
}
