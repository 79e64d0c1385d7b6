package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// ServerVersion asks a server for its version, as the server reports it:
// Redis and Sentinel INFO server's redis_version, PostgreSQL's SHOW
// server_version, etcd's /version (etcdserver).
func (c *Cluster) ServerVersion(ctx context.Context, s Server) (string, error) {
	switch s := s.(type) {
	case *Redis, *Sentinel:
		v, err := redisCall(ctx, s.Addr(), "INFO", "server")
		if err != nil {
			return "", fmt.Errorf("%s: INFO server: %w", s.Name(), err)
		}
		text, _ := v.(string)
		for _, l := range strings.Split(text, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "redis_version:"); ok {
				return rest, nil
			}
		}
		return "", fmt.Errorf("%s: INFO server names no redis_version", s.Name())
	case *Postgres:
		conn, err := s.Connect(ctx)
		if err != nil {
			return "", err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		var v string
		if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
			return "", fmt.Errorf("%s: SHOW server_version: %w", s.Name(), err)
		}
		return v, nil
	case *EtcdMember:
		b, err := s.get(ctx, http.MethodGet, "/version", "")
		if err != nil {
			return "", err
		}
		var v struct {
			Server string `json:"etcdserver"`
		}
		if err := json.Unmarshal(b, &v); err != nil || v.Server == "" {
			return "", fmt.Errorf("%s /version: %q", s.Name(), b)
		}
		return v.Server, nil
	}
	if v, ok := s.(interface {
		Version(context.Context) (string, error)
	}); ok {
		return v.Version(ctx)
	}
	return "", fmt.Errorf("%s: no way to ask its version", s.Name())
}

// ServerVersions asks every server (and Sentinel) for its version, by
// name; a server that does not answer is left out.
func (c *Cluster) ServerVersions(ctx context.Context) map[string]string {
	all := c.Servers()
	if g := c.SentinelGroup(); g != nil {
		for _, s := range g.Sentinels {
			all = append(all, s)
		}
	}
	out := map[string]string{}
	for _, s := range all {
		if v, err := c.ServerVersion(ctx, s); err == nil {
			out[s.Name()] = v
		}
	}
	return out
}
