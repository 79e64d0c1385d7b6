package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// dockerAnswers reports whether a Docker engine answers the docker CLI.
func dockerAnswers() bool {
	out, err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").Output()
	return err == nil && strings.TrimSpace(string(out)) != ""
}

// RequireDocker skips t, saying so plainly, when no Docker engine answers
// (a machine without Docker runs no container test, CI or not). When one
// answers but image (if not empty) is missing, t fails under CI — where
// `make test` builds the image first — and skips otherwise, naming
// `make images`.
func RequireDocker(t testing.TB, image string) {
	t.Helper()
	if !dockerAnswers() {
		t.Skip("no Docker engine answers: container tests skipped")
	}
	if image == "" {
		return
	}
	if err := exec.Command("docker", "image", "inspect", image).Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("image %s is missing, and CI is set: build it first (make images)", image)
		}
		t.Skipf("image %s is missing: build it with make images", image)
	}
}

// DockerLeftovers lists the containers and networks whose label
// org.locktorture.owner is owner (a process's owner.ID).
func DockerLeftovers(t testing.TB, owner string) []string {
	t.Helper()
	var out []string
	for _, args := range [][]string{
		{"ps", "-a", "--filter", "label=org.locktorture.owner=" + owner, "--format", "container {{.Names}}"},
		{"network", "ls", "--filter", "label=org.locktorture.owner=" + owner, "--format", "network {{.Name}}"},
	} {
		b, err := exec.Command("docker", args...).Output()
		if err != nil {
			t.Fatalf("docker %s: %v", strings.Join(args, " "), err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" {
				out = append(out, l)
			}
		}
	}
	return out
}
