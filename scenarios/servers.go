package scenarios

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/locktorture/locktorture/cluster"
)

// SecurityTLS is `security: tls`: the run's own servers speak TLS.
const SecurityTLS = "tls"

// serverModes are the values `servers:` takes.
var serverModes = []string{cluster.ServersLocal, cluster.ServersDocker, cluster.ServersExternal}

// validateServers checks where the servers come from: servers (local, the
// default, or docker) and images (a kind — redis, postgres, etcd,
// zookeeper, or all — to an image reference; docker only).
func (s *Scenario) validateServers() error {
	if s.Servers != "" && !slices.Contains(serverModes, s.Servers) {
		return &fieldError{field: "servers", msg: fmt.Sprintf("unknown servers mode %q (local, docker, external)", s.Servers)}
	}
	switch {
	case s.Servers == cluster.ServersExternal && s.ServersFile == "":
		return &fieldError{field: "servers", msg: "servers: external needs servers_file: a file naming the servers (--servers-file FILE)"}
	case s.Servers != cluster.ServersExternal && s.ServersFile != "":
		return &fieldError{field: "servers_file", msg: "servers_file names someone else's servers: it needs servers: external (--servers external)"}
	}
	switch {
	case s.Security != "" && s.Security != SecurityTLS:
		return &fieldError{field: "security", msg: fmt.Sprintf("unknown security %q (tls, or leave it out)", s.Security)}
	case s.Security == SecurityTLS && s.Servers == cluster.ServersExternal:
		return &fieldError{field: "security", msg: "security: tls starts the run's own servers with TLS; servers someone else runs speak TLS when the servers file says so (tls: {ca: FILE})"}
	case s.Security == SecurityTLS:
		if err := s.tlsKinds(); err != nil {
			return err
		}
	}
	switch s.RedisProgram {
	case "", cluster.RedisProgramRedis, cluster.RedisProgramValkey:
	default:
		return &fieldError{field: "redis_program", msg: fmt.Sprintf("unknown Redis server program %q (redis, valkey)", s.RedisProgram)}
	}
	if s.RedisProgram == cluster.RedisProgramValkey && s.Servers == cluster.ServersExternal {
		return &fieldError{field: "redis_program", msg: "redis_program chooses the program the harness starts: with servers: external, the servers file names the servers (Valkey or Redis alike)"}
	}
	if len(s.Images) == 0 {
		return nil
	}
	if s.Servers != cluster.ServersDocker {
		return &fieldError{field: "images", msg: "images name what containers run: they need servers: docker (--servers docker)"}
	}
	kinds := make([]string, 0, len(s.Images))
	for k := range s.Images {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		if err := cluster.CheckImages(map[string]string{k: s.Images[k]}); err != nil {
			return &fieldError{field: "images", path: []string{k}, msg: "images: " + err.Error()}
		}
	}
	return nil
}

// tlsModes are the modes in which the harness can start k's servers with
// TLS (its cluster.TLSStarter), none when it cannot.
func tlsModes(k cluster.Kind) []string {
	if t, ok := k.Abilities.(cluster.TLSStarter); ok {
		return t.TLSModes()
	}
	return nil
}

// tlsKinds refuses security: tls when a kind of server the run starts
// cannot start with TLS where the servers run.
func (s *Scenario) tlsKinds() error {
	mode := s.Servers
	if mode == "" {
		mode = cluster.ServersLocal
	}
	for _, kind := range s.ServerKinds() {
		k, ok := cluster.LookupKind(kind)
		if !ok || slices.Contains(tlsModes(k), mode) {
			continue
		}
		var can []string
		for _, o := range cluster.Kinds() {
			if modes := tlsModes(o); len(modes) > 0 {
				can = append(can, fmt.Sprintf("%s (%s)", o.Name, strings.Join(modes, ", ")))
			}
		}
		return &fieldError{field: "security", msg: fmt.Sprintf("security: tls: the run's %s cannot start with TLS in %s mode (it can: %s)", kind, mode, strings.Join(can, ", "))}
	}
	return nil
}
