package nemesis

import (
	"context"
	"fmt"

	"github.com/locktorture/locktorture/cluster"
)

// server-pause freezes servers with SIGSTOP and thaws them with SIGCONT: a
// server-side stop-the-world pause. Clients' requests wait in its socket
// buffers and are answered, late, when it resumes.
func init() {
	register(Info{
		Name:        "server-pause",
		Description: "freezes servers with SIGSTOP, thaws them with SIGCONT",
		AppliesTo:   "backends with servers",
	}, serverFault{
		name:        "server-pause",
		durationKey: "ms",
		do: func(ctx context.Context, s cluster.Server) error {
			p, ok := s.(cluster.Pauser)
			if !ok {
				return fmt.Errorf("%w: %s cannot be paused", ErrTarget, s.Name())
			}
			return p.Pause(ctx)
		},
		undo: func(ctx context.Context, s cluster.Server) error { return s.(cluster.Pauser).Resume(ctx) },
	})
}
