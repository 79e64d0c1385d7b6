package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// pause freezes a client process like a stop-the-world GC: every goroutine
// the client owns (its loop and any lease watchdog) stops at its next step,
// and all resume together. Bytes already on the wire still arrive.
type pause struct{}

func init() {
	Register(Info{
		Name:        "pause",
		Description: "freezes a client process like a stop-the-world GC pause (its loop and its lease watchdog)",
		AppliesTo:   "every backend",
	}, pause{})
}

func (pause) Start(ctx context.Context, env *Env, t Target, d time.Duration) (map[string]any, Healer, error) {
	if t.Process < 0 || t.Process >= len(env.Gates) {
		return nil, nil, fmt.Errorf("%w: no client process %d", ErrTarget, t.Process)
	}
	g := env.Gates[t.Process]
	if !g.Pause() {
		return nil, nil, nil // already paused by another step
	}
	heal := func(ctx context.Context) (map[string]any, error) {
		g.Resume()
		return map[string]any{"process": t.Process}, nil
	}
	return map[string]any{"process": t.Process, "ms": d.Milliseconds()}, heal, nil
}

func (pause) RandomTarget(rng *rand.Rand, env *Env) Target {
	return Target{Process: rng.IntN(max(1, len(env.Gates)))}
}

// RandomEvent makes a random pause strike right after the client's next
// successful read at or after its planned time: holding the lock, between
// reading the resource and writing it back, as in Kleppmann's example.
func (pause) RandomEvent() string { return "read" }

func (pause) Validate(t Target, clients int) error {
	if t.Process < 0 || t.Process >= clients {
		return fmt.Errorf("%w: pause needs a client process from 0 to %d, not %d", ErrTarget, clients-1, t.Process)
	}
	return nil
}
