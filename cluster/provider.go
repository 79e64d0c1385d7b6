package cluster

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/locktorture/locktorture/cluster/local"
	"github.com/locktorture/locktorture/cluster/provider"
	"github.com/locktorture/locktorture/internal/owner"
)

// Where servers come from (Options.Servers).
const (
	// ServersLocal runs servers as local processes on 127.0.0.1 (the default).
	ServersLocal = provider.Local
	// ServersDocker runs each server in a container of its own, on a
	// network of the run's own (the cluster/docker package provides it).
	ServersDocker = provider.Docker
)

// imageAll is the Images key that names one image for every kind.
const imageAll = "all"

// ErrNoProvider is wrapped when a mode of Options.Servers is not built in.
var ErrNoProvider = provider.ErrNoProvider

// The provider types, from cluster/provider, under the names the server
// kinds use.
type (
	// Provider is where a cluster's servers run (provider.Provider).
	Provider = provider.Provider
	// Unit is one server's program (provider.Unit).
	Unit = provider.Unit
	// Spec is one server's program and how to run it (provider.Spec).
	Spec = provider.Spec
	// File is a file a server needs before it starts (provider.File).
	File = provider.File
)

var (
	sweepersMu sync.Mutex
	sweepers   []func(ctx context.Context) []string
)

// RegisterSweeper adds f to what SweepLeftovers runs: a mode's own sweep of
// what killed harnesses left (the docker provider's: containers and
// networks), so that any run, whatever its mode, removes it.
func RegisterSweeper(f func(ctx context.Context) []string) {
	sweepersMu.Lock()
	defer sweepersMu.Unlock()
	sweepers = append(sweepers, f)
}

// SweepLeftovers removes what harnesses that died without cleaning up left
// on this machine, in every mode this program knows: temporary directories
// (and the processes working in them) under tempDir (empty: the system's),
// and what each registered sweeper finds. It returns what it removed, in
// words. Best effort.
func SweepLeftovers(ctx context.Context, tempDir string) []string {
	if tempDir == "" {
		tempDir = os.TempDir()
	}
	owner.Reap(tempDir, "")
	sweepersMu.Lock()
	fs := slices.Clone(sweepers)
	sweepersMu.Unlock()
	var out []string
	for _, f := range fs {
		out = append(out, f(ctx)...)
	}
	return out
}

// ResolveImage is the image for kind: images[kind], else images["all"],
// else def.
func ResolveImage(images map[string]string, kind, def string) string {
	if ref := images[kind]; ref != "" {
		return ref
	}
	if ref := images[imageAll]; ref != "" {
		return ref
	}
	return def
}

// CheckImages refuses a kind that is not registered (Kinds) and not
// "all", and an empty reference or one that is not an image reference.
func CheckImages(images map[string]string) error {
	keys := make([]string, 0, len(images))
	for k := range images {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, known := LookupKind(k); !known && k != imageAll {
			return fmt.Errorf("image kind %q is not one of %s, %s", k, strings.Join(KindNames(), ", "), imageAll)
		}
		if strings.TrimSpace(images[k]) == "" {
			return fmt.Errorf("image for %s: empty reference", k)
		}
		if !imageRef.MatchString(images[k]) {
			return fmt.Errorf("image for %s: %q is not an image reference ([registry/]name[:tag][@digest], the name in lowercase: redis:7.4, locktorture-servers:bookworm)", k, images[k])
		}
	}
	return nil
}

// imageRef is the grammar of a Docker image reference (distribution's
// reference package): an optional registry host[:port]/, a lowercase path,
// an optional :tag and an optional @digest.
var imageRef = regexp.MustCompile(`^(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?/)?` +
	`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*` +
	`(?::\w[\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`)

// restartUnit starts a server's unit again — killing it first if it still
// runs — and waits until ready says it serves: every server type's Restart.
func restartUnit(ctx context.Context, name string, u Unit, ready func(context.Context) error) error {
	if u.Running() {
		if err := u.Kill(ctx); err != nil {
			return err
		}
	}
	if err := u.Start(ctx); err != nil {
		return err
	}
	if err := WaitUnit(ctx, name, u, ready); err != nil {
		return fmt.Errorf("cluster: restart: %w", err)
	}
	return nil
}

// WaitFor polls f until it succeeds or the time runs out.
func WaitFor(ctx context.Context, limit time.Duration, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(4 * local.ReadyPoll):
		}
	}
}

// WaitUnit polls ready until it succeeds, the unit exits, or ctx ends
// (local.ReadyLimit at most).
func WaitUnit(ctx context.Context, name string, u Unit, ready func(context.Context) error) error {
	return WaitUnitFor(ctx, name, u, ready, local.ReadyLimit)
}

// WaitUnitFor is WaitUnit allowing limit for a unit that is not a local
// process (a container whose first start does more than start a server).
func WaitUnitFor(ctx context.Context, name string, u Unit, ready func(context.Context) error, limit time.Duration) error {
	if p, ok := u.(*local.Proc); ok {
		return p.WaitReady(ctx, ready)
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var last error
	for {
		if last = ready(ctx); last == nil {
			return nil
		}
		select {
		case <-u.Exited():
			return fmt.Errorf("%w: %s exited during start-up%s (its log: %s): %w", ErrStart, name, lastLogLine(u.LogPath()), u.LogPath(), last)
		case <-ctx.Done():
			return fmt.Errorf("%w: %s not ready (see %s): %w", ErrStart, name, u.LogPath(), last)
		case <-time.After(local.ReadyPoll):
		}
	}
}

// lastLogLine is ", saying: LINE" with the last line of a log, or "".
func lastLogLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return ""
	}
	if len(last) > 200 {
		last = last[:200] + "..."
	}
	return ", saying: " + last
}

// TemplateFormat changes whenever what the cached template holds changes,
// so an old cache is never used for a new layout.
const TemplateFormat = "v2"

// Machine is a provider whose servers are processes of the harness's own
// machine (cluster/local): a kind may then make their files itself, as
// the system user they run as, and keep what it makes once between runs.
// PostgreSQL's data directory is copied from such a template, made by
// this machine's initdb; a provider without the ability (a container)
// runs initdb where the server runs.
type Machine interface {
	Provider
	RunAs(user, why, pkg string) (local.RunAs, error)
	Template(ctx context.Context, key, scratch, note string, as local.RunAs, build func(ctx context.Context, dir string) (string, error)) (string, error)
}
