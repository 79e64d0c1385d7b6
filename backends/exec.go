package backends

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/locktorture/locktorture/cluster"
)

// exec is any program, in any language, that speaks the client protocol
// (docs/client-protocol.md): the harness starts the servers it names here,
// and one copy of the program per client, each told the addresses of its
// own links. The program announces what it can do when it opens.
func init() {
	Register(Info{
		Name:        "exec",
		Description: "any program that speaks the client protocol (exec: {command: [...], env: {...}, servers: [redis]})",
		Servers:     "those exec.servers names: redis (the default, 1 redis-server), postgres, etcd or zookeeper",
		Kinds:       ExecKinds,
		Lease:       true,
		Sentinel:    true,
		Options:     func() Options { return FreeOptions{} },
	}, newExec)
}

// ExecKinds are the kinds of server exec.servers may name.
var ExecKinds = []string{"redis", "postgres", "etcd", "zookeeper"}

// ErrExecClient is returned by the exec backend's Client: its clients
// are processes, which the runner starts.
var ErrExecClient = errors.New("exec clients run as processes (client_mode: process)")

type execBackend struct{}

func newExec(ctx context.Context, env Env) (Backend, error) {
	kinds := env.ExecServers
	if len(kinds) == 0 {
		kinds = []string{"redis"}
	}
	for _, k := range kinds {
		var err error
		switch k {
		case "redis":
			if env.Redis == RedisSentinel {
				_, err = env.Cluster.StartSentinelGroup(ctx, env.Persistence)
			} else {
				_, err = env.Cluster.StartRedis(ctx, cluster.RedisOptions{Persistence: env.Persistence})
			}
		case "postgres":
			_, err = env.Cluster.Postgres(ctx, env.Postgres)
		case "etcd":
			_, err = env.Cluster.Etcd(ctx, cluster.EtcdOptions{Members: env.EtcdMembers})
		case "zookeeper":
			_, err = env.Cluster.ZooKeeper(ctx, cluster.ZooKeeperOptions{Members: env.ZooKeeperMembers})
		default:
			err = fmt.Errorf("exec cannot start a server of kind %q (it starts: %s)", k, strings.Join(ExecKinds, ", "))
		}
		if err != nil {
			return nil, fmt.Errorf("backends: exec: %w", err)
		}
	}
	return execBackend{}, nil
}

func (execBackend) Client(ctx context.Context, c ClientEnv) (Client, error) {
	return nil, ErrExecClient
}

func (execBackend) Close() error { return nil }
