package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/locktorture/locktorture/cluster"
)

// latency holds bytes on chosen links for a while (Kleppmann's delayed
// packet): by default the replies to the target clients from every server,
// or only from the target servers.
type latency struct{}

func init() {
	Register(Info{
		Name:        "latency",
		Description: "delays (and jitters) the bytes on chosen links and directions: slow replies, delayed packets",
		AppliesTo:   "backends with servers",
	}, latency{})
}

func (latency) UsesLinks() bool { return true }

func (latency) Applies(backend string, kinds []string, lease bool) error {
	if len(kinds) == 0 {
		return fmt.Errorf("latency does not apply to %s: it talks to no server", backend)
	}
	return nil
}

func (latency) Validate(t Target, clients int) error {
	if err := validateClients(t, clients); err != nil {
		return err
	}
	if t.Latency <= 0 {
		return fmt.Errorf("%w: latency needs `latency:` (e.g. 2s)", ErrTarget)
	}
	if _, err := cluster.ParseDirection(t.Direction); err != nil {
		return fmt.Errorf("%w: %w", ErrTarget, err)
	}
	return validateServerNames(t)
}

func (latency) RandomTarget(rng *rand.Rand, env *Env) Target {
	return Target{Process: rng.IntN(max(1, len(env.Gates))), Direction: "downstream",
		Latency: time.Duration(50+rng.IntN(450)) * time.Millisecond, Jitter: 20 * time.Millisecond}
}

func (latency) Start(ctx context.Context, env *Env, t Target, d time.Duration) (map[string]any, Healer, error) {
	dir := cluster.Downstream
	if t.Direction != "" {
		var err error
		if dir, err = cluster.ParseDirection(t.Direction); err != nil {
			return nil, nil, err
		}
	}
	servers, err := resolveServers(env, t.Servers)
	if err != nil {
		return nil, nil, err
	}
	if len(servers) == 0 {
		servers = env.Cluster.Servers()
	}
	clients := t.ClientList()
	if len(clients) == 0 {
		clients = allClients(env)
	}
	ls, err := clientLinks(env, clients, servers)
	if err != nil {
		return nil, nil, err
	}
	lf := &linkFault{}
	for _, l := range ls {
		h, err := l.Delay(ctx, dir, t.Latency.Milliseconds(), t.Jitter.Milliseconds())
		if err != nil {
			_ = lf.heal(ctx)
			return nil, nil, err
		}
		lf.links, lf.handles = append(lf.links, l), append(lf.handles, h)
	}
	val := map[string]any{"clients": clients, "servers": serverLabels(env, servers), "direction": string(dir),
		"latency_ms": t.Latency.Milliseconds(), "jitter_ms": t.Jitter.Milliseconds(), "ms": d.Milliseconds()}
	heal := func(ctx context.Context) (map[string]any, error) {
		return map[string]any{"clients": clients, "servers": serverLabels(env, servers)}, lf.heal(ctx)
	}
	return val, heal, nil
}
