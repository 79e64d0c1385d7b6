package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/locktorture/locktorture/cluster"
)

// kill crashes servers with kill -9 and starts them again on the same
// address when the step's duration is over (`for: 0s` restarts at once).
// Whether a restarted Redis remembers its keys depends on the scenario's
// persistence setting. Recorded as a `kill` op, then a `restart` op.
type kill struct{}

func init() {
	Register(Info{
		Name:        "kill",
		Description: "kill -9 servers, restart them at once or after a delay (with or without persistence)",
		AppliesTo:   "backends with servers",
	}, kill{})
}

func (kill) OpNames(string) (string, string) { return "kill", "restart" }

func (kill) AllowsZeroDuration() bool { return true }

func (kill) Applies(backend string, kinds []string, lease bool) error {
	if len(kinds) == 0 {
		return fmt.Errorf("kill does not apply to %s: it has no server", backend)
	}
	return nil
}

func (kill) Validate(t Target, clients int) error {
	if len(t.Servers) == 0 {
		return fmt.Errorf("%w: kill needs `servers:`", ErrTarget)
	}
	return validateServerNames(t)
}

func (kill) RandomTarget(rng *rand.Rand, env *Env) Target {
	return Target{Process: -1, Servers: randomServers(rng, env, 1)}
}

func (kill) Start(ctx context.Context, env *Env, t Target, d time.Duration) (map[string]any, Healer, error) {
	ss, err := resolveServers(env, t.Servers)
	if err != nil {
		return nil, nil, err
	}
	var killed []cluster.Killer
	for _, s := range ss {
		k, ok := s.(cluster.Killer)
		if !ok {
			return nil, nil, fmt.Errorf("%w: %s cannot be killed", ErrTarget, s.Name())
		}
		if err := k.Kill(ctx); err != nil {
			return nil, nil, err
		}
		killed = append(killed, k)
	}
	labels := serverLabels(env, ss)
	heal := func(ctx context.Context) (map[string]any, error) {
		var errs []error
		for _, k := range killed {
			errs = append(errs, k.Restart(ctx))
		}
		return map[string]any{"servers": labels}, errors.Join(errs...)
	}
	return map[string]any{"servers": labels, "restart_after_ms": d.Milliseconds()}, heal, nil
}
