package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/locktorture/locktorture/cluster"
)

// serverFault is a fault done to whole servers and undone when it heals:
// kill/restart, SIGSTOP/SIGCONT. The faults that use it add only their
// action and their names.
type serverFault struct {
	name string
	// do and undo act on one server; they return ErrTarget when the server
	// cannot take the fault.
	do, undo func(ctx context.Context, s cluster.Server) error
	// durationKey names the fault's duration in the start op's value.
	durationKey string
}

func (f serverFault) Applies(backend string, kinds []string, lease bool) error {
	if len(kinds) == 0 {
		return fmt.Errorf("%s does not apply to %s: it has no server", f.name, backend)
	}
	return nil
}

func (f serverFault) Validate(t Target, clients int) error {
	if len(t.Servers) == 0 {
		return fmt.Errorf("%w: %s needs `servers:`", ErrTarget, f.name)
	}
	return validateServerNames(t)
}

func (f serverFault) RandomTarget(rng *rand.Rand, env *Env) Target {
	return Target{Process: -1, Servers: randomServers(rng, env, 1)}
}

func (f serverFault) Start(ctx context.Context, env *Env, t Target, d time.Duration) (map[string]any, Healer, error) {
	ss, err := resolveServers(env, t.Servers)
	if err != nil {
		return nil, nil, err
	}
	var done []cluster.Server
	for _, s := range ss {
		if err := f.do(ctx, s); err != nil {
			for _, u := range done {
				_ = f.undo(ctx, u)
			}
			return nil, nil, err
		}
		done = append(done, s)
	}
	labels := serverLabels(env, ss)
	heal := func(ctx context.Context) (map[string]any, error) {
		var errs []error
		for _, s := range done {
			errs = append(errs, f.undo(ctx, s))
		}
		return map[string]any{"servers": labels}, errors.Join(errs...)
	}
	return map[string]any{"servers": labels, f.durationKey: d.Milliseconds()}, heal, nil
}
