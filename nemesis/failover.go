package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/locktorture/locktorture/cluster/kinds/redis"
)

// failover takes the Redis primary of a Sentinel group down (kill -9) so
// that the Sentinels promote the replica — which, if replication was cut
// first (a partition with topology replication), never got the lock. When
// the step is over it waits for the promotion and restarts the old primary,
// which Sentinel turns into a replica. Recorded as `failover`, then
// `restart`. It needs the scenario's `redis: sentinel` setup.
type failover struct{}

func init() {
	register(Info{
		Name:        "failover",
		Description: "kills the Redis primary so Sentinel promotes a replica that never got the lock (needs redis: sentinel)",
		AppliesTo:   "single-Redis backends over Sentinel",
	}, failover{})
}

func (failover) OpNames(string) (string, string) { return "failover", "restart" }

func (failover) UsesLinks() bool { return true }

// FailoverParams are failover's: the client whose `on:` event fires it
// (the primary it kills is whichever Sentinel names), and whether the
// failover is forced.
type FailoverParams struct {
	Proc `yaml:",inline"`
	// Force has a Sentinel fail over right after the kill (SENTINEL
	// FAILOVER), as an operator would, instead of waiting for the
	// Sentinels to agree the primary is down and elect a leader: the
	// promotion then takes about a second instead of about 4 (about 9
	// when the first election splits the vote).
	Force bool `yaml:"force,omitempty"`
}

func (p *FailoverParams) String() string {
	if p.Force {
		return strings.TrimSpace(p.words() + " forced")
	}
	return p.words()
}

// Validate checks the client process, if any.
func (p *FailoverParams) Validate(s Shape) error { return p.validate(s.Clients) }

func (failover) Params() Params { return &FailoverParams{} }

func (failover) Applies(s Shape) error {
	if !hasKind(s.Kinds, redis.Kind) {
		return fmt.Errorf("failover does not apply to %s: it needs Redis with Sentinel", s.Backend)
	}
	if !s.Sentinel {
		return errors.New("failover needs `redis: sentinel` (a primary, a replica and Sentinels)")
	}
	return s.controlled("failover")
}

func (failover) RandomParams(rng *rand.Rand, env *Env) Params { return &FailoverParams{} }

func (failover) Start(ctx context.Context, env *Env, params Params, d time.Duration) (map[string]any, Healer, error) {
	g := redis.SentinelGroupOf(env.Cluster)
	if g == nil {
		return nil, nil, fmt.Errorf("%w: failover needs `redis: sentinel`", ErrTarget)
	}
	addr, err := g.PrimaryAddr(ctx)
	if err != nil {
		return nil, nil, err
	}
	old, ok := env.Cluster.ServerByAddr(addr).(*redis.Redis)
	if !ok {
		return nil, nil, fmt.Errorf("%w: the primary %s is not a server of this run", ErrTarget, addr)
	}
	if err := old.Kill(ctx); err != nil {
		return nil, nil, err
	}
	val := map[string]any{"killed": letter(env, old), "servers": []string{letter(env, old)}}
	if p, ok := params.(*FailoverParams); ok && p.Force {
		val["forced"] = true
		if err := g.ForceFailover(ctx); err != nil {
			// Sentinel still fails over on its own, later: say so.
			val["forced"] = "refused: " + err.Error()
		}
	}
	w := watchPromotion(ctx, g, old.Addr())
	heal := func(ctx context.Context) (map[string]any, error) {
		val := map[string]any{"servers": []string{letter(env, old)}}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		select {
		case <-w.done:
		case <-wctx.Done():
		}
		if a, after, ok := w.result(); ok {
			if s := env.Cluster.ServerByAddr(a); s != nil {
				val["primary"] = letter(env, s)
			}
			val["promoted_ms"] = after.Milliseconds()
		} else {
			val["primary"] = "none: Sentinel did not promote a replica in time"
		}
		return val, old.Restart(ctx)
	}
	return val, heal, nil
}

// Effect is when the failover took effect: when a Sentinel first named
// the new primary (promoted_ms after the strike, as its restart op
// records); never, when none was named before the old primary came back.
func (failover) Effect(stopVal map[string]any) (time.Duration, bool) {
	ms, ok := stopVal["promoted_ms"].(int64)
	return time.Duration(ms) * time.Millisecond, ok
}

// promotion follows the Sentinels, from a failover's strike on, until
// one names a primary other than the old one.
type promotion struct {
	done  chan struct{}
	mu    sync.Mutex
	addr  string
	after time.Duration
}

// watchPromotion asks the Sentinels every 50ms, for at most a minute or
// until ctx ends, for the primary that replaced old.
func watchPromotion(ctx context.Context, g *redis.SentinelGroup, old string) *promotion {
	p := &promotion{done: make(chan struct{})}
	struck := time.Now()
	go func() {
		defer close(p.done)
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		for {
			if a, err := g.PrimaryAddr(ctx); err == nil && a != old {
				p.mu.Lock()
				p.addr, p.after = a, time.Since(struck)
				p.mu.Unlock()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return p
}

// result is the new primary and how long after the strike a Sentinel
// first named it; false while none has.
func (p *promotion) result() (string, time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr, p.after, p.addr != ""
}
