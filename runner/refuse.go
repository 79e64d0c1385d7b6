package runner

import (
	"context"
	"fmt"
	"slices"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/redis"
	"github.com/locktorture/locktorture/scenarios"
)

// errRefused is wrapped (with ErrBadInput) when a run is refused before it
// starts because its servers cannot do what the scenario asks: Valkey
// where the host or the image has none.
var errRefused = fmt.Errorf("%w: refused", ErrBadInput)

// refusal says in one line why sc cannot run with the servers its mode
// and images give, or "" when it can: redis_program: valkey needs
// valkey-server (and valkey-sentinel over Sentinel) where the Redis
// servers run.
func refusal(ctx context.Context, sc *scenarios.Scenario) string {
	if sc.RedisProgram != cluster.RedisProgramValkey || !runsRedis(sc) {
		return ""
	}
	server, sentinel := cluster.RedisPrograms(sc.RedisProgram)
	programs := []string{server}
	if sc.Redis == backends.RedisSentinel {
		programs = append(programs, sentinel)
	}
	for _, p := range programs {
		if why := cluster.ProgramMissing(ctx, sc.Servers, sc.Images, redis.Kind, p, p); why != "" {
			return "redis_program: valkey: " + why + "; Debian has Valkey from 13 (trixie): --image redis=locktorture-servers:trixie (make images SUITES=trixie)"
		}
	}
	return ""
}

// runsRedis reports whether the run starts Redis servers: its backend's,
// or the exec backend's exec.servers.
func runsRedis(sc *scenarios.Scenario) bool {
	if sc.Backend == scenarios.ExecBackend {
		if sc.Exec == nil || len(sc.Exec.Servers) == 0 {
			return true // exec's default: one redis-server
		}
		return slices.Contains(sc.Exec.Servers, redis.Kind)
	}
	info, _, err := backends.Lookup(sc.Backend)
	return err == nil && slices.Contains(info.ServerKinds(), redis.Kind)
}
