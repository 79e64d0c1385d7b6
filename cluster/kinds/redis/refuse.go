package redis

import (
	"context"

	"github.com/locktorture/locktorture/cluster"
)

// Refusal says in one line why the run cannot start its Redis servers
// where they run, or "" when it can: redis_program: valkey needs
// valkey-server (and valkey-sentinel over Sentinel) where the Redis
// servers run (a cluster.Refuser: the runner asks before a run starts).
func (kind) Refusal(ctx context.Context, r cluster.RunView) string {
	if r.RedisProgram != cluster.RedisProgramValkey {
		return ""
	}
	server, sentinel := cluster.RedisPrograms(r.RedisProgram)
	programs := []string{server}
	if r.Start.Sentinel {
		programs = append(programs, sentinel)
	}
	for _, p := range programs {
		if why := cluster.ProgramMissing(ctx, r.Servers, r.Images, Kind, p, p); why != "" {
			return "redis_program: valkey: " + why + "; Debian has Valkey from 13 (trixie): --image redis=locktorture-servers:trixie (make images SUITES=trixie)"
		}
	}
	return ""
}
