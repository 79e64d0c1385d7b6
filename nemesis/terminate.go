package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/locktorture/locktorture/cluster"
)

// terminate has PostgreSQL kill a lock holder's session
// (pg_terminate_backend), as an operator, a pooler or an idle-session
// timeout would: every lock the session held is released at once, while
// the client may still believe it holds them. With a target process it
// ends that client's sessions; without, every client session that holds an
// advisory or row lock. Recorded as one `terminate` op naming the sessions.
type terminate struct{}

func init() {
	Register(Info{
		Name:        "terminate",
		Description: "PostgreSQL terminates the lock holder's session (pg_terminate_backend)",
		AppliesTo:   "PostgreSQL backends",
	}, terminate{})
}

func (terminate) OpNames(string) (string, string) { return "terminate", "" }

func (terminate) AllowsZeroDuration() bool { return true }

func (terminate) Applies(backend string, kinds []string, lease bool) error {
	if !hasKind(kinds, "postgres") {
		return fmt.Errorf("terminate does not apply to %s: it has no PostgreSQL session", backend)
	}
	return nil
}

func (terminate) Validate(t Target, clients int) error { return validateClients(t, clients) }

func (terminate) RandomTarget(rng *rand.Rand, env *Env) Target { return Target{Process: -1} }

func (terminate) Start(ctx context.Context, env *Env, t Target, d time.Duration) (map[string]any, Healer, error) {
	var pg *cluster.Postgres
	for _, s := range env.Cluster.Servers() {
		if p, ok := s.(*cluster.Postgres); ok {
			pg = p
		}
	}
	if pg == nil {
		return nil, nil, fmt.Errorf("%w: terminate needs a PostgreSQL server", ErrTarget)
	}
	conn, err := pg.Connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var apps []string
	for _, p := range t.ClientList() {
		apps = append(apps, cluster.PostgresApplication(p))
	}
	// Client sessions are named locktorture-p<N>; the harness's own (the
	// resource's) are not.
	rows, err := conn.Query(ctx, `
SELECT a.application_name, a.pid, pg_terminate_backend(a.pid)
FROM pg_stat_activity a
WHERE a.pid <> pg_backend_pid()
  AND a.application_name LIKE 'locktorture-p%'
  AND (cardinality($1::text[]) > 0 AND a.application_name = ANY($1::text[])
       OR cardinality($1::text[]) = 0 AND EXISTS (
            SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.granted
              AND (l.locktype = 'advisory' OR l.locktype = 'tuple' OR l.mode = 'RowShareLock')))`, apps)
	if err != nil {
		return nil, nil, fmt.Errorf("terminate: %w", err)
	}
	var sessions []map[string]any
	for rows.Next() {
		var app string
		var pid int32
		var ok bool
		if err := rows.Scan(&app, &pid, &ok); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("terminate: %w", err)
		}
		sessions = append(sessions, map[string]any{"client": app[len("locktorture-"):], "pid": pid, "terminated": ok})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("terminate: %w", err)
	}
	val := map[string]any{"sessions": sessions}
	if len(t.ClientList()) > 0 {
		val["clients"] = t.ClientList()
	}
	heal := func(ctx context.Context) (map[string]any, error) { return nil, nil }
	return val, heal, nil
}
