package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// ImagesStatusEnv names the file through which `make test` (scripts/test.sh)
// tells the tests about the image build it runs beside them: empty while
// the build runs, then the build's exit status.
const ImagesStatusEnv = "LOCKTORTURE_IMAGES_STATUS"

// waitForImages waits while make test's image build, which runs beside the
// tests, is still going, and returns how it ended: "" when no build is
// running beside the tests (or it succeeded), else what to tell the test.
func waitForImages(t testing.TB) string {
	path := os.Getenv(ImagesStatusEnv)
	if path == "" {
		return ""
	}
	logged := false
	for {
		b, err := os.ReadFile(path)
		if err != nil {
			return "" // the build's status file is gone: nothing to wait for
		}
		if st := strings.TrimSpace(string(b)); st != "" {
			if st == "0" {
				return ""
			}
			return "the image build beside the tests failed (exit " + st + "; its log is " + path + ".log)"
		}
		if !logged {
			t.Logf("waiting for the image build make test runs beside the tests (%s)", path)
			logged = true
		}
		time.Sleep(time.Second)
	}
}

// dockerAnswers reports whether a Docker engine answers the docker CLI.
func dockerAnswers() bool {
	out, err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").Output()
	return err == nil && strings.TrimSpace(string(out)) != ""
}

// RequireDocker skips t, saying so plainly, when no Docker engine answers
// (a machine without Docker runs no container test, CI or not). When one
// answers but image (if not empty) is missing, t fails under CI — where
// `make test` builds the image first — and skips otherwise, naming
// `make images`. While `make test` builds the images beside the tests
// (ImagesStatusEnv), it first waits for that build to end; a test that
// needs an image calls t.Parallel first where it can, so that it waits
// after its package's other tests, not before them.
func RequireDocker(t testing.TB, image string) {
	t.Helper()
	if !dockerAnswers() {
		t.Skip("no Docker engine answers: container tests skipped")
	}
	if image == "" {
		return
	}
	if why := waitForImages(t); why != "" && os.Getenv("CI") != "" {
		t.Fatalf("image %s: %s", image, why)
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
