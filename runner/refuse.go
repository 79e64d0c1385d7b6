package runner

import (
	"context"
	"fmt"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/scenarios"
)

// errRefused is wrapped (with ErrBadInput) when a run is refused before it
// starts because its servers cannot do what the scenario asks: Valkey
// where the host or the image has none.
var errRefused = fmt.Errorf("%w: refused", ErrBadInput)

// refusal says in one line why sc cannot run with the servers its mode
// and images give, or "" when it can: the first refusal of a kind the run
// uses that is a cluster.Refuser (redis: redis_program: valkey needs
// valkey-server, and valkey-sentinel over Sentinel, where the Redis
// servers run).
func refusal(ctx context.Context, sc *scenarios.Scenario) string {
	r := sc.RunView()
	for _, name := range r.Kinds {
		k, _ := cluster.LookupKind(name)
		if rf, ok := k.Abilities.(cluster.Refuser); ok {
			if why := rf.Refusal(ctx, r); why != "" {
				return why
			}
		}
	}
	return ""
}
