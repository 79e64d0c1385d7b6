package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/locktorture/locktorture/cluster/kinds/redis"
)

// clock skews time. On clients it jumps each target client's own clock
// (the clock its lock code reads) by jump and/or makes it drift at rate,
// until healed. On Redis servers (`servers:`) it applies a jump of the
// server's clock by its one observable effect — every key's remaining TTL
// is cut by the jump — recorded with "effect": "ttl-shortened" so nobody takes
// it for a kernel clock change; that cannot be undone, so healing a server
// jump does nothing.
type clock struct{}

func init() {
	register(Info{
		Name:        "clock",
		Description: "jumps and drifts client clocks; Redis server clock jumps (as shortened TTLs)",
		AppliesTo:   "lease-based backends (client clocks); Redis backends (server clocks)",
	}, clock{})
}

// ClockParams are clock's: the clients whose clocks jump and drift, or
// the Redis servers whose clocks jump.
type ClockParams struct {
	ClientSet `yaml:",inline"`
	ServerSet `yaml:",inline"`
	// Jump moves the clock (negative: backwards).
	Jump Duration `yaml:"jump,omitempty"`
	// Rate makes a client's clock drift (1.5: half again as fast).
	Rate float64 `yaml:"rate,omitempty"`
}

func (p *ClockParams) String() string {
	r := ""
	if p.Rate != 0 {
		r = fmt.Sprintf("rate %g", p.Rate)
	}
	return words(p.ClientSet.words(), p.ServerSet.words(), durWord("jump", p.Jump), r)
}

// Validate requires a jump or a rate; a server clock can only jump.
func (p *ClockParams) Validate(s Shape) error {
	if err := p.ClientSet.validate(s.Clients); err != nil {
		return err
	}
	if p.Jump == 0 && p.Rate == 0 {
		return keyErr("", "needs `jump:` and/or `rate:`")
	}
	if len(p.Servers) > 0 && p.Rate != 0 {
		return keyErr("rate", "a server clock can only jump (no rate)")
	}
	if p.Rate < 0 {
		return keyErr("rate", "rate must be positive, not %g", p.Rate)
	}
	return p.ServerSet.validate()
}

func (clock) Params() Params { return &ClockParams{} }

func (clock) Applies(s Shape) error {
	if !s.Lease {
		return fmt.Errorf("clock does not apply to %s: it has no lease, so no clock matters", s.Backend)
	}
	return nil
}

func (clock) RandomParams(rng *rand.Rand, env *Env) Params {
	if rng.IntN(2) == 0 || len(env.Gates) == 0 {
		if rs := redisServers(env); len(rs) > 0 {
			s := rs[rng.IntN(len(rs))]
			return &ClockParams{ServerSet: ServerSet{Servers: []string{s.Name()}}, Jump: Duration(500+rng.IntN(2000)) * Duration(time.Millisecond)}
		}
	}
	p := rng.IntN(max(1, len(env.Gates)))
	return &ClockParams{ClientSet: ClientSet{Proc: Proc{Process: &p}}, Jump: Duration(rng.IntN(4000)-2000) * Duration(time.Millisecond), Rate: 0.8 + rng.Float64()*0.4}
}

func redisServers(env *Env) []*redis.Redis {
	var out []*redis.Redis
	for _, s := range env.Cluster.Servers() {
		if r, ok := s.(*redis.Redis); ok {
			out = append(out, r)
		}
	}
	return out
}

func (clock) Start(ctx context.Context, env *Env, params Params, d time.Duration) (map[string]any, Healer, error) {
	t := params.(*ClockParams)
	jump := t.Jump.D()
	if len(t.Servers) > 0 {
		ss, err := resolveServers(env, t.Servers)
		if err != nil {
			return nil, nil, err
		}
		changed := 0
		for _, s := range ss {
			r, ok := s.(*redis.Redis)
			if !ok {
				return nil, nil, fmt.Errorf("%w: %s is not a Redis server; only Redis server clocks can jump", ErrTarget, s.Name())
			}
			n, err := r.ShortenTTLs(ctx, jump)
			if err != nil {
				return nil, nil, err
			}
			changed += n
		}
		labels := serverLabels(env, ss)
		val := map[string]any{"servers": labels, "jump_ms": jump.Milliseconds(), "effect": "ttl-shortened", "keys": changed}
		heal := func(ctx context.Context) (map[string]any, error) {
			return map[string]any{"servers": labels, "note": "a server clock jump cannot be undone"}, nil
		}
		return val, heal, nil
	}
	clients := t.List()
	for _, p := range clients {
		if p >= len(env.Clocks) {
			return nil, nil, fmt.Errorf("%w: no client process %d", ErrTarget, p)
		}
	}
	for _, p := range clients {
		c := env.Clocks[p]
		if t.Jump != 0 {
			c.Jump(jump)
		}
		if t.Rate != 0 {
			c.SetRate(t.Rate)
		}
	}
	val := map[string]any{"clients": clients, "jump_ms": jump.Milliseconds(), "ms": d.Milliseconds()}
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
