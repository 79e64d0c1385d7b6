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
		Servers:     "those exec.servers names: redis (the default, 1 redis-server), or any of " + strings.Join(cluster.KindNames(), ", "),
		Kinds:       cluster.KindNames(),
		Lease:       true,
		Sentinel:    true,
		Options:     func() Options { return FreeOptions{} },
	}, newExec)
}

// errExecClient is returned by the exec backend's Client: its clients
// are processes, which the runner starts.
var errExecClient = errors.New("exec clients run as processes (client_mode: process)")

type execBackend struct{}

func newExec(ctx context.Context, env Env) (Backend, error) {
	if err := env.Cluster.StartKinds(ctx, env.ExecServers, env.Servers); err != nil {
		return nil, fmt.Errorf("backends: exec: %w", err)
	}
	return execBackend{}, nil
}

func (execBackend) Client(ctx context.Context, c ClientEnv) (Client, error) {
	return nil, errExecClient
}

func (execBackend) Close() error { return nil }
