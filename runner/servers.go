package runner

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
)

// recordServers notes where the run's servers came from — the mode, each
// kind's image, each server's version as the server reports it — for
// results.json, run.json and the report, and says so in run.log.
func (r *run) recordServers(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	src := &checker.ServerSource{Mode: r.cl.Mode(), Images: r.cl.Images(), Versions: r.cl.ServerVersions(ctx)}
	if len(src.Images) == 0 {
		src.Images = nil
	}
	if len(src.Versions) == 0 {
		src.Versions = nil
	}
	r.servers = src
	var parts []string
	for k, v := range src.Images {
		parts = append(parts, k+" image "+v)
	}
	for k, v := range src.Versions {
		parts = append(parts, k+" "+v)
	}
	sort.Strings(parts)
	r.lg.Printf("servers: %s; %s", src.Mode, strings.Join(parts, ", "))
}

// failedStart notes a server that did not come up (its container or
// process exited, or never answered) in run.log, and keeps the store
// directory with run.log and the servers' logs, which say why; any other
// failure before the clients run leaves no store directory — a start
// cut short by an interrupt among them (its server was stopped, not
// broken; a cell whose servers a lane started ahead may never run).
func (r *run) failedStart(err error) error {
	if !errors.Is(err, cluster.ErrStart) || errors.Is(err, ErrInterrupted) || r.dir == "" || r.lg == nil {
		return err
	}
	r.keepLogs = true
	r.lg.Printf("a server did not start: %v", err)
	return fmt.Errorf("%w (run.log and the servers' logs are kept in %s)", err, r.dir)
}
