package nemesis

import (
	"context"
	"fmt"

	"github.com/locktorture/locktorture/cluster"
)

// kill crashes servers with kill -9 and starts them again on the same
// address when the step's duration is over (`for: 0s` restarts at once).
// Whether a restarted Redis remembers its keys depends on the scenario's
// persistence setting. Recorded as a `kill` op, then a `restart` op.
type kill struct{ serverFault }

func init() {
	register(Info{
		Name:        "kill",
		Description: "kill -9 servers, restart them at once or after a delay (with or without persistence)",
		AppliesTo:   "backends with servers",
	}, kill{serverFault{
		name:        "kill",
		durationKey: "restart_after_ms",
		do: func(ctx context.Context, s cluster.Server) error {
			k, ok := s.(cluster.Killer)
			if !ok {
				return fmt.Errorf("%w: %s cannot be killed", ErrTarget, s.Name())
			}
			return k.Kill(ctx)
		},
		undo: func(ctx context.Context, s cluster.Server) error { return s.(cluster.Killer).Restart(ctx) },
	}})
}

func (kill) OpNames(string) (string, string) { return "kill", "restart" }

func (kill) AllowsZeroDuration() bool { return true }
