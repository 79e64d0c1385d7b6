package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/locktorture/locktorture/cluster"
)

// clock skews time. On clients it jumps each target client's own clock
// (the clock its lock code reads) by Jump and/or makes it drift at Rate,
// until healed. On Redis servers (`servers:`) it applies a jump of the
// server's clock by its one observable effect — every key's remaining TTL
// is cut by Jump — recorded with "effect": "ttl-shortened" so nobody takes
// it for a kernel clock change; that cannot be undone, so healing a server
// jump does nothing.
type clock struct{}

func init() {
	Register(Info{
		Name:        "clock",
		Description: "jumps and drifts client clocks; Redis server clock jumps (as shortened TTLs)",
		AppliesTo:   "lease-based backends (client clocks); Redis backends (server clocks)",
	}, clock{})
}

func (clock) Applies(backend string, kinds []string, lease bool) error {
	if !lease {
		return fmt.Errorf("clock does not apply to %s: it has no lease, so no clock matters", backend)
	}
	return nil
}

func (clock) Validate(t Target, clients int) error {
	if err := validateClients(t, clients); err != nil {
		return err
	}
	if t.Jump == 0 && t.Rate == 0 {
		return fmt.Errorf("%w: clock needs `jump:` and/or `rate:`", ErrTarget)
	}
	if len(t.Servers) > 0 && t.Rate != 0 {
		return fmt.Errorf("%w: a server clock can only jump (no rate)", ErrTarget)
	}
	if t.Rate < 0 {
		return fmt.Errorf("%w: clock rate must be positive", ErrTarget)
	}
	return validateServerNames(t)
}

func (clock) RandomTarget(rng *rand.Rand, env *Env) Target {
	if rng.IntN(2) == 0 || len(env.Gates) == 0 {
		if rs := redisServers(env); len(rs) > 0 {
			s := rs[rng.IntN(len(rs))]
			return Target{Process: -1, Servers: []string{s.Name()}, Jump: time.Duration(500+rng.IntN(2000)) * time.Millisecond}
		}
	}
	return Target{Process: rng.IntN(max(1, len(env.Gates))), Jump: time.Duration(rng.IntN(4000)-2000) * time.Millisecond, Rate: 0.8 + rng.Float64()*0.4}
}

func redisServers(env *Env) []*cluster.Redis {
	var out []*cluster.Redis
	for _, s := range env.Cluster.Servers() {
		if r, ok := s.(*cluster.Redis); ok {
			out = append(out, r)
		}
	}
	return out
}

func (clock) Start(ctx context.Context, env *Env, t Target, d time.Duration) (map[string]any, Healer, error) {
	if len(t.Servers) > 0 {
		ss, err := resolveServers(env, t.Servers)
		if err != nil {
			return nil, nil, err
		}
		changed := 0
		for _, s := range ss {
			r, ok := s.(*cluster.Redis)
			if !ok {
				return nil, nil, fmt.Errorf("%w: %s is not a Redis server; only Redis server clocks can jump", ErrTarget, s.Name())
			}
			n, err := r.ShortenTTLs(ctx, t.Jump)
			if err != nil {
				return nil, nil, err
			}
			changed += n
		}
		labels := serverLabels(env, ss)
		val := map[string]any{"servers": labels, "jump_ms": t.Jump.Milliseconds(), "effect": "ttl-shortened", "keys": changed}
		heal := func(ctx context.Context) (map[string]any, error) {
			return map[string]any{"servers": labels, "note": "a server clock jump cannot be undone"}, nil
		}
		return val, heal, nil
	}
	clients := t.ClientList()
	for _, p := range clients {
		if p >= len(env.Clocks) {
			return nil, nil, fmt.Errorf("%w: no client process %d", ErrTarget, p)
		}
	}
	for _, p := range clients {
		c := env.Clocks[p]
		if t.Jump != 0 {
			c.Jump(t.Jump)
		}
		if t.Rate != 0 {
			c.SetRate(t.Rate)
		}
	}
	val := map[string]any{"clients": clients, "jump_ms": t.Jump.Milliseconds(), "ms": d.Milliseconds()}
	if t.Rate != 0 {
		val["rate"] = t.Rate
	}
	heal := func(ctx context.Context) (map[string]any, error) {
		for _, p := range clients {
			env.Clocks[p].Reset()
		}
		return map[string]any{"clients": clients}, nil
	}
	return val, heal, nil
}
