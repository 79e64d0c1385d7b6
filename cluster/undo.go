package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/locktorture/locktorture/internal/journal"
)

// What a run does to servers it does not own is journaled before it is
// done (internal/journal): these are the undos a guard or a later run
// replays when the harness died before undoing them itself (a kind can
// register its own: redis's replication cut; cluster/external registers
// the clean-up of an external run's namespace). A run's guard starts once
// every kind is registered (cluster/kinds/all).
const (
	// undoDocker thaws the container (args: container) if it is paused
	// and starts it if it is not running: after docker pause or kill.
	undoDocker = "docker-restore"
)

func init() {
	journal.Register(undoDocker, func(ctx context.Context, args map[string]string) error {
		return restoreContainer(ctx, args["container"])
	})
}

// restoreContainer leaves a container as a run found it: unpaused, running.
func restoreContainer(ctx context.Context, container string) error {
	out, err := exec.CommandContext(ctx, "docker", "inspect", "--format", "{{.State.Paused}} {{.State.Running}}", container).CombinedOutput()
	if err != nil {
		return fmt.Errorf("docker inspect %s: %w: %s", container, err, strings.TrimSpace(string(out)))
	}
	state := strings.Fields(string(out))
	if len(state) == 2 && state[0] == "true" {
		if out, err := exec.CommandContext(ctx, "docker", "unpause", container).CombinedOutput(); err != nil {
			return fmt.Errorf("docker unpause %s: %w: %s", container, err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	if len(state) == 2 && state[1] != "true" {
		if out, err := exec.CommandContext(ctx, "docker", "start", container).CombinedOutput(); err != nil {
			return fmt.Errorf("docker start %s: %w: %s", container, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}
