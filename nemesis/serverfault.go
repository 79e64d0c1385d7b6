package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/locktorture/locktorture/cluster"
)

// serverFault is a fault done to whole servers and undone when it heals:
// kill/restart, SIGSTOP/SIGCONT. The faults that use it add only their
// action and their names.
type serverFault struct {
	name string
	// do and undo act on one server; they return ErrTarget when the server
	// cannot take the fault.
	do, undo func(ctx context.Context, s cluster.Server) error
	// durationKey names the fault's duration in the start op's value.
	durationKey string
}

// ServerParams are the params of a fault done to whole servers (kill,
// server-pause): the servers (required: names, letters, or `leader` for
// the member of the run's etcd or ZooKeeper that leads when the fault
// starts), and the client whose `on:` event fires the step.
type ServerParams struct {
	Proc      `yaml:",inline"`
	ServerSet `yaml:",inline"`
}

func (p *ServerParams) String() string { return words(p.Proc.words(), p.ServerSet.words()) }

// Validate requires servers; `leader` only where the run has an
// ensemble that elects one (etcd, ZooKeeper).
func (p *ServerParams) Validate(s Shape) error {
	if err := p.Proc.validate(s.Clients); err != nil {
		return err
	}
	if len(p.Servers) == 0 {
		return keyErr("", "needs `servers:` (names, letters in start order: A, B, ..., or %s)", leaderTarget)
	}
	if slices.Contains(p.Servers, leaderTarget) && !anyKind(s.Kinds, func(k cluster.Kind) bool {
		l, ok := k.Abilities.(cluster.LeaderElector)
		return ok && l.ElectsLeader()
	}) {
		return keyErr("servers", "servers [%s] names the member of an etcd cluster or a ZooKeeper ensemble that leads; %s runs on %s", leaderTarget, s.Backend, orDefault(strings.Join(s.Kinds, ", "), "no server"))
	}
	return p.ServerSet.validate()
}

// ServerNames returns the servers named that exist before the run (the
// `leader` is found when the fault starts).
func (p *ServerParams) ServerNames() []string { return memberNames(p.Servers) }

func (f serverFault) Params() Params { return &ServerParams{} }

func (f serverFault) Applies(s Shape) error {
	if len(s.Kinds) == 0 {
		return fmt.Errorf("%s does not apply to %s: it has no server", f.name, s.Backend)
	}
	return s.controlled(f.name)
}

func (f serverFault) RandomParams(rng *rand.Rand, env *Env) Params {
	return &ServerParams{ServerSet: ServerSet{Servers: randomServers(rng, env, 1)}}
}

func (f serverFault) Start(ctx context.Context, env *Env, params Params, d time.Duration) (map[string]any, Healer, error) {
	ss, leader, err := resolveTargets(ctx, env, params.(*ServerParams).Servers)
	if err != nil {
		return nil, nil, err
	}
	var done []cluster.Server
	for _, s := range ss {
		if err := f.do(ctx, s); err != nil {
			for _, u := range done {
				_ = f.undo(ctx, u)
			}
			return nil, nil, err
		}
		done = append(done, s)
	}
	labels := serverLabels(env, ss)
	heal := func(ctx context.Context) (map[string]any, error) {
		var errs []error
		for _, s := range done {
			errs = append(errs, f.undo(ctx, s))
		}
		return map[string]any{"servers": labels}, errors.Join(errs...)
	}
	val := map[string]any{"servers": labels, f.durationKey: d.Milliseconds()}
	if leader != "" {
		val["leader"] = leader
	}
	return val, heal, nil
}
