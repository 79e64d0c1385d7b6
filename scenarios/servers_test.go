package scenarios_test

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/scenarios"
)

func TestServersAndImages(t *testing.T) {
	tests := []struct {
		name string
		in   string
		line int    // 0: accepted
		has  string // a word the problem must name
	}{
		{"local by default", base, 0, ""},
		{"docker", base + "servers: docker\n", 0, ""},
		{"docker with images", base + "servers: docker\nimages:\n  all: locktorture-servers:bookworm\n  redis: redis:7.4\n", 0, ""},
		{"unknown mode", base + "servers: podman\n", 3, "podman"},
		{"unknown image kind", base + "servers: docker\nimages:\n  redis: redis:7.4\n  mysql: mysql:8\n", 6, "mysql"},
		{"empty reference", base + "servers: docker\nimages:\n  redis: \"\"\n", 5, "empty"},
		{"images without docker", base + "images:\n  redis: redis:7.4\n", 3, "servers: docker"},
		{"tls", base + "security: tls\n", 0, ""},
		{"tls in docker", base + "servers: docker\nsecurity: tls\n", 0, ""},
		{"unknown security", base + "security: mtls\n", 3, "mtls"},
		{"tls for etcd in docker", "name: x\nbackend: etcd\nservers: docker\nsecurity: tls\n", 0, ""},
		{"tls for zookeeper", "name: x\nbackend: zookeeper\nsecurity: tls\n", 3, "zookeeper cannot start with TLS in local mode"},
		{"tls for postgres in docker", "name: x\nbackend: pg-advisory\nservers: docker\nsecurity: tls\n", 4, "postgres cannot start with TLS in docker mode"},
		{"tls for exec's zookeeper", "name: x\nbackend: exec\nexec: {command: [prog], servers: [etcd, zookeeper]}\nsecurity: tls\n", 4, "zookeeper"},
		{"tls for someone else's servers", base + "servers: external\nservers_file: s.yaml\nsecurity: tls\n", 5, "servers file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := scenarios.Parse([]byte(tc.in), "f.yaml")
			if tc.line == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				out, err := s.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				back, err := scenarios.Parse(out, "eff.yaml")
				if err != nil || back.Servers != s.Servers || back.Security != s.Security || !reflect.DeepEqual(back.Images, s.Images) {
					t.Errorf("scenario.yaml does not keep servers/images: %v\n%s", err, out)
				}
				return
			}
			if !errors.Is(err, scenarios.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			m := errLine.FindStringSubmatch(err.Error())
			if m == nil || m[1] != strconv.Itoa(tc.line) || !strings.Contains(m[2], tc.has) {
				t.Errorf("error %q: want line %d naming %q", err, tc.line, tc.has)
			}
		})
	}
}

func TestApplyServers(t *testing.T) {
	docker := "docker"
	tests := []struct {
		name string
		o    scenarios.Overrides
		has  string // "" accepted
	}{
		{"docker and every image", scenarios.Overrides{Servers: &docker, Images: map[string]string{"all": "x:1"}}, ""},
		{"image kind unknown", scenarios.Overrides{Servers: &docker, Images: map[string]string{"mongo": "x:1"}}, "--image: "},
		{"image without docker", scenarios.Overrides{Images: map[string]string{"redis": "x:1"}}, "--image: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := scenarios.Builtin("baseline")
			if err != nil {
				t.Fatal(err)
			}
			err = s.Apply(tc.o)
			if tc.has == "" {
				if err != nil || s.Servers != "docker" || s.Images["all"] != "x:1" {
					t.Errorf("err %v, servers %q, images %v", err, s.Servers, s.Images)
				}
				return
			}
			if !errors.Is(err, scenarios.ErrInvalid) || !strings.Contains(err.Error(), tc.has) {
				t.Errorf("err = %v, want ErrInvalid naming %q", err, tc.has)
			}
		})
	}
}
