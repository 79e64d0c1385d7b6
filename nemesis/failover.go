package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/locktorture/locktorture/cluster"
)

// failover takes the Redis primary of a Sentinel group down (kill -9) so
// that the Sentinels promote the replica — which, if replication was cut
// first (a partition with topology replication), never got the lock. When
// the step is over it waits for the promotion and restarts the old primary,
// which Sentinel turns into a replica. Recorded as `failover`, then
// `restart`. It needs the scenario's `redis: sentinel` setup.
type failover struct{}

func init() {
	Register(Info{
		Name:        "failover",
		Description: "kills the Redis primary so Sentinel promotes a replica that never got the lock (needs redis: sentinel)",
		AppliesTo:   "single-Redis backends over Sentinel",
	}, failover{})
}

func (failover) OpNames(string) (string, string) { return "failover", "restart" }

func (failover) UsesLinks() bool { return true }

func (failover) Applies(backend string, kinds []string, lease bool) error {
	if !hasKind(kinds, "redis") {
		return fmt.Errorf("failover does not apply to %s: it needs Redis with Sentinel", backend)
	}
	return nil
}

func (failover) Validate(t Target, clients int) error { return validateClients(t, clients) }

func (failover) RandomTarget(rng *rand.Rand, env *Env) Target { return Target{Process: -1} }

func (failover) Start(ctx context.Context, env *Env, t Target, d time.Duration) (map[string]any, Healer, error) {
	g := env.Cluster.SentinelGroup()
	if g == nil {
		return nil, nil, fmt.Errorf("%w: failover needs `redis: sentinel`", ErrTarget)
	}
	addr, err := g.PrimaryAddr(ctx)
	if err != nil {
		return nil, nil, err
	}
	old, ok := env.Cluster.ServerByAddr(addr).(*cluster.Redis)
	if !ok {
		return nil, nil, fmt.Errorf("%w: the primary %s is not a server of this run", ErrTarget, addr)
	}
	if err := old.Kill(ctx); err != nil {
		return nil, nil, err
	}
	heal := func(ctx context.Context) (map[string]any, error) {
		val := map[string]any{"servers": []string{letter(env, old)}}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		for {
			a, err := g.PrimaryAddr(wctx)
			if err == nil && a != old.Addr() {
				if s := env.Cluster.ServerByAddr(a); s != nil {
					val["primary"] = letter(env, s)
				}
				break
			}
			select {
			case <-wctx.Done():
				val["primary"] = "none: Sentinel did not promote a replica in time"
				return val, old.Restart(ctx)
			case <-time.After(50 * time.Millisecond):
			}
		}
		return val, old.Restart(ctx)
	}
	return map[string]any{"killed": letter(env, old), "servers": []string{letter(env, old)}}, heal, nil
}
