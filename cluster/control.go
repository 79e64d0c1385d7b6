package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/locktorture/locktorture/internal/journal"
)

// errNoControl is returned by a fault on a server someone else runs that
// the servers file gives no control for.
var errNoControl = errors.New("the servers file gives no control for this server")

// controlledUnit is a server someone else runs in a container the servers
// file names (control: docker): server faults reach it through the docker
// command — pause/unpause (the cgroup freezer), kill, start. It never
// stops or removes the container: the run does not own it.
type controlledUnit struct {
	name, container string
	journal         *journal.Journal // nil: not journaled

	mu     sync.Mutex
	paused bool
	undo   []func() // the journal's done marks of the faults in force
}

// journaled records, before a pause or kill, that the container must be
// thawed or started again should the harness die first.
func (u *controlledUnit) journaled(verb string) error {
	done, err := u.journal.Add(journal.Action{Kind: undoDocker, Args: map[string]string{"container": u.container},
		What: fmt.Sprintf("thaw or start container %s (%s) after docker %s", u.container, u.name, verb)})
	if err != nil {
		return fmt.Errorf("cluster: %s: %w", u.name, err)
	}
	u.mu.Lock()
	u.undo = append(u.undo, done)
	u.mu.Unlock()
	return nil
}

// restored marks the container's faults undone in the journal.
func (u *controlledUnit) restored() {
	u.mu.Lock()
	undo := u.undo
	u.undo = nil
	u.mu.Unlock()
	for _, done := range undo {
		done()
	}
}

// docker runs one docker command against the container.
func (u *controlledUnit) docker(ctx context.Context, verb string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", append(append([]string{verb}, args...), u.container)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("cluster: %s: docker %s %s: %w: %s", u.name, verb, u.container, err, strings.TrimSpace(out.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// Start starts the container again after Kill.
func (u *controlledUnit) Start(ctx context.Context) error {
	if _, err := u.docker(ctx, "start"); err != nil {
		return err
	}
	u.restored()
	return nil
}

// Pause freezes the container (docker pause: the cgroup freezer).
func (u *controlledUnit) Pause(ctx context.Context) error {
	if err := u.journaled("pause"); err != nil {
		return err
	}
	if _, err := u.docker(ctx, "pause"); err != nil {
		return err
	}
	u.mu.Lock()
	u.paused = true
	u.mu.Unlock()
	return nil
}

// Resume thaws it.
func (u *controlledUnit) Resume(ctx context.Context) error {
	if _, err := u.docker(ctx, "unpause"); err != nil {
		return err
	}
	u.mu.Lock()
	u.paused = false
	u.mu.Unlock()
	u.restored()
	return nil
}

// Kill kills the container's processes at once (docker kill: SIGKILL).
func (u *controlledUnit) Kill(ctx context.Context) error {
	if err := u.journaled("kill"); err != nil {
		return err
	}
	_, err := u.docker(ctx, "kill")
	return err
}

// Stop leaves the server as the run found it: a container the run paused
// is thawed, one it killed is started again; it is never stopped.
func (u *controlledUnit) Stop(ctx context.Context) error {
	u.mu.Lock()
	paused := u.paused
	u.mu.Unlock()
	if paused {
		return u.Resume(ctx)
	}
	if !u.Running() {
		return u.Start(ctx)
	}
	u.restored()
	return nil
}

// Running asks docker whether the container runs.
func (u *controlledUnit) Running() bool {
	out, err := u.docker(context.Background(), "inspect", "--format", "{{.State.Running}}")
	return err == nil && out == "true"
}

// Exited is never closed: the harness does not watch a server it does not own.
func (u *controlledUnit) Exited() <-chan struct{} { return nil }

// LogPath is empty: the container's log is its owner's (docker logs).
func (u *controlledUnit) LogPath() string { return "" }

// OnDeath is not watched for a server someone else runs.
func (u *controlledUnit) OnDeath(func(name, logPath string)) {}

// uncontrolledUnit is a server someone else runs with no control: every
// fault on it fails with errNoControl (runs refuse such faults before
// they start; this is the second net).
type uncontrolledUnit struct{ name string }

func (u uncontrolledUnit) err() error { return fmt.Errorf("cluster: %s: %w", u.name, errNoControl) }

// Start fails: see errNoControl.
func (u uncontrolledUnit) Start(context.Context) error { return u.err() }

// Pause fails: see errNoControl.
func (u uncontrolledUnit) Pause(context.Context) error { return u.err() }

// Resume fails: see errNoControl.
func (u uncontrolledUnit) Resume(context.Context) error { return u.err() }

// Kill fails: see errNoControl.
func (u uncontrolledUnit) Kill(context.Context) error { return u.err() }

// Stop does nothing: the server is not the run's.
func (u uncontrolledUnit) Stop(context.Context) error { return nil }

// Running is true: someone else keeps it up.
func (u uncontrolledUnit) Running() bool { return true }

// Exited is never closed.
func (u uncontrolledUnit) Exited() <-chan struct{} { return nil }

// LogPath is empty.
func (u uncontrolledUnit) LogPath() string { return "" }

// OnDeath is not watched.
func (u uncontrolledUnit) OnDeath(func(name, logPath string)) {}

// Uncontrolled reports whether s is a server someone else runs that no
// fault can act on: its unit is the one ExternalUnit gives a server its
// servers file names no control for (whatever the key it was named by:
// an address, or a DSN).
func Uncontrolled(s Server) bool {
	u, ok := s.(interface{ unit() Unit })
	if !ok {
		return false
	}
	_, un := u.unit().(uncontrolledUnit)
	return un
}
