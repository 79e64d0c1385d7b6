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
	register(Info{
		Name:        "pause",
		Description: "freezes a client process like a stop-the-world GC pause (its loop and its lease watchdog)",
		AppliesTo:   "every backend",
	}, pause{})
}

// PauseParams are pause's: the client process to freeze (required).
type PauseParams struct {
	Proc `yaml:",inline"`
}

func (p *PauseParams) String() string { return p.words() }

// Validate requires a client process of the run.
func (p *PauseParams) Validate(s Shape) error {
	if p.Process == nil {
		return keyErr("process", "needs `process:` (a client from 0 to %d)", s.Clients-1)
	}
	return p.validate(s.Clients)
}

func (pause) Params() Params { return &PauseParams{} }

func (pause) Start(ctx context.Context, env *Env, params Params, d time.Duration) (map[string]any, Healer, error) {
	proc := params.(*PauseParams).EventProcess()
	if proc < 0 || proc >= len(env.Gates) {
		return nil, nil, fmt.Errorf("%w: no client process %d", ErrTarget, proc)
	}
	g := env.Gates[proc]
	if !g.Pause() {
		return nil, nil, nil // already paused by another step
	}
	heal := func(ctx context.Context) (map[string]any, error) {
		g.Resume()
		return map[string]any{"process": proc}, nil
	}
	return map[string]any{"process": proc, "ms": d.Milliseconds()}, heal, nil
}

func (pause) RandomParams(rng *rand.Rand, env *Env) Params {
	p := rng.IntN(max(1, len(env.Gates)))
	return &PauseParams{Proc{Process: &p}}
}

// RandomEvent makes a random pause strike right after the client's next
// successful read at or after its planned time: holding the lock, between
// reading the resource and writing it back, as in Kleppmann's example.
func (pause) RandomEvent() string { return "read" }
