package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/locktorture/locktorture/cluster"
)

// serverPause freezes servers with SIGSTOP and thaws them with SIGCONT: a
// server-side stop-the-world pause. Clients' requests wait in its socket
// buffers and are answered, late, when it resumes.
type serverPause struct{}

func init() {
	Register(Info{
		Name:        "server-pause",
		Description: "freezes servers with SIGSTOP, thaws them with SIGCONT",
		AppliesTo:   "backends with servers",
	}, serverPause{})
}

func (serverPause) Applies(backend string, kinds []string, lease bool) error {
	if len(kinds) == 0 {
		return fmt.Errorf("server-pause does not apply to %s: it has no server", backend)
	}
	return nil
}

func (serverPause) Validate(t Target, clients int) error {
	if len(t.Servers) == 0 {
		return fmt.Errorf("%w: server-pause needs `servers:`", ErrTarget)
	}
	return validateServerNames(t)
}

func (serverPause) RandomTarget(rng *rand.Rand, env *Env) Target {
	return Target{Process: -1, Servers: randomServers(rng, env, 1)}
}

func (serverPause) Start(ctx context.Context, env *Env, t Target, d time.Duration) (map[string]any, Healer, error) {
	ss, err := resolveServers(env, t.Servers)
	if err != nil {
		return nil, nil, err
	}
	var paused []cluster.Pauser
	for _, s := range ss {
		p, ok := s.(cluster.Pauser)
		if !ok {
			return nil, nil, fmt.Errorf("%w: %s cannot be paused", ErrTarget, s.Name())
		}
		if err := p.Pause(ctx); err != nil {
			for _, q := range paused {
				_ = q.Resume(ctx)
			}
			return nil, nil, err
		}
		paused = append(paused, p)
	}
	labels := serverLabels(env, ss)
	heal := func(ctx context.Context) (map[string]any, error) {
		var errs []error
		for _, p := range paused {
			errs = append(errs, p.Resume(ctx))
		}
		return map[string]any{"servers": labels}, errors.Join(errs...)
	}
	return map[string]any{"servers": labels, "ms": d.Milliseconds()}, heal, nil
}
