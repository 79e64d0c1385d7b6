package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/internal/owner"
	"github.com/locktorture/locktorture/internal/testenv"
)

// TestServersFlags: --servers and --image refuse bad input (254) and a
// docker run that cannot start (no engine, no image) is one line, 255,
// with nothing left: no store directory, no container, no network.
func TestServersFlags(t *testing.T) {
	store := t.TempDir()
	run := []string{"run", "--scenario", "kleppmann-pause", "--store", store, "--quiet"}
	for _, tc := range []struct {
		name   string
		args   []string
		docker bool   // needs an engine
		env    string // DOCKER_HOST
		code   int
		want   string
	}{
		{"unknown mode", []string{"--servers", "podman"}, false, "", 254, `--servers: unknown servers mode "podman"`},
		{"image without KIND=", []string{"--servers", "docker", "--image", "redis"}, false, "", 254, "want KIND=REF"},
		{"unknown kind", []string{"--servers", "docker", "--image", "mysql=mysql:8"}, false, "", 254, `--image: images: image kind "mysql"`},
		{"image without docker", []string{"--image", "all=x:1"}, false, "", 254, "need servers: docker"},
		{"no engine", []string{"--servers", "docker"}, false, "unix:///nonexistent/docker.sock", 255, "no Docker engine answers"},
		{"image missing", []string{"--servers", "docker", "--image", "all=locktorture-no-such-image:0"}, true, "", 255, "make images"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.docker {
				testenv.RequireDocker(t, "")
			}
			if tc.env != "" {
				t.Setenv("DOCKER_HOST", tc.env)
			}
			code, _, stderr := runCLI(t, append(append([]string(nil), run...), tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d naming %q", code, stderr, tc.code, tc.want)
			}
			if n := strings.Count(strings.TrimSpace(stderr), "\n"); n > 0 {
				t.Errorf("want one line, got %q", stderr)
			}
			if runs, _ := filepath.Glob(filepath.Join(store, "*", "*", "*")); len(runs) > 0 {
				t.Errorf("store written: %v", runs)
			}
			if tc.docker {
				ownerID, err := owner.ID()
				if err != nil {
					t.Fatal(err)
				}
				if left := testenv.DockerLeftovers(t, ownerID); len(left) > 0 {
					t.Errorf("left behind: %v", left)
				}
			}
		})
	}
}
