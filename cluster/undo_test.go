package cluster

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/internal/testenv"
)

// TestUndoDocker: the journaled undo of a docker kill starts the container
// again; of a docker pause, thaws it.
func TestUndoDocker(t *testing.T) {
	testenv.RequireDocker(t, "locktorture-servers:bookworm")
	name := "lt-undo-test-" + strings.ReplaceAll(t.Name(), "/", "-")
	if out, err := exec.Command("docker", "run", "-d", "--name", name, "locktorture-servers:bookworm", "sleep", "1000").CombinedOutput(); err != nil {
		t.Fatalf("docker run: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
	state := func() string {
		out, _ := exec.Command("docker", "inspect", "--format", "{{.State.Status}}", name).Output()
		return strings.TrimSpace(string(out))
	}
	for _, verb := range []string{"pause", "kill"} {
		if out, err := exec.Command("docker", verb, name).CombinedOutput(); err != nil {
			t.Fatalf("docker %s: %v: %s", verb, err, out)
		}
		if err := restoreContainer(context.Background(), name); err != nil {
			t.Fatal(err)
		}
		if s := state(); s != "running" {
			t.Errorf("after docker %s and the undo: %s, want running", verb, s)
		}
	}
}
