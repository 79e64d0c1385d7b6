package cluster

import (
	"context"
	"fmt"
)

// ServerVersion asks a server for its version, as the server reports it
// (each kind's Versioner: Redis and Sentinel INFO server's redis_version,
// PostgreSQL's SHOW server_version, etcd's /version, ZooKeeper's srvr).
func (c *Cluster) ServerVersion(ctx context.Context, s Server) (string, error) {
	if v, ok := s.(Versioner); ok {
		return v.Version(ctx)
	}
	return "", fmt.Errorf("%s: no way to ask its version", s.Name())
}

// ServerVersions asks every server (and Sentinel) for its version, by
// name; a server that does not answer is left out.
func (c *Cluster) ServerVersions(ctx context.Context) map[string]string {
	all := append(c.Servers(), c.Companions()...)
	out := map[string]string{}
	for _, s := range all {
		if v, err := c.ServerVersion(ctx, s); err == nil {
			out[s.Name()] = v
		}
	}
	return out
}
