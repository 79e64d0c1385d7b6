package cluster

import (
	"strings"
	"testing"
)

func TestResolveImage(t *testing.T) {
	tests := []struct {
		images     map[string]string
		kind, want string
	}{
		{nil, "redis", "redis:7.4"},
		{map[string]string{"all": "local:1"}, "redis", "local:1"},
		{map[string]string{"all": "local:1", "redis": "redis:6"}, "redis", "redis:6"},
		{map[string]string{"all": "local:1", "redis": "redis:6"}, "etcd", "local:1"},
		{map[string]string{"postgres": "postgres:13"}, "etcd", "redis:7.4"},
	}
	for _, tc := range tests {
		if got := ResolveImage(tc.images, tc.kind, "redis:7.4"); got != tc.want {
			t.Errorf("ResolveImage(%v, %s) = %s, want %s", tc.images, tc.kind, got, tc.want)
		}
	}
}

func TestCheckImages(t *testing.T) {
	tests := []struct {
		images map[string]string
		has    string // "" accepted
	}{
		{nil, ""},
		{map[string]string{"all": "a", "redis": "b", "postgres": "c", "etcd": "d", "zookeeper": "e"}, ""},
		{map[string]string{"redis": "b", "mysql": "m"}, `"mysql"`},
		{map[string]string{"redis": " "}, "empty"},
		{map[string]string{"all": "UPPER:bad tag"}, `"UPPER:bad tag" is not an image reference`},
		{map[string]string{"redis": "redis:7.4:extra"}, "not an image reference"},
		{map[string]string{"redis": "docker.io/library/redis:7.4-alpine", "etcd": "localhost:5000/team/etcd@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "all": "locktorture-servers:bookworm"}, ""},
	}
	for _, tc := range tests {
		err := CheckImages(tc.images)
		switch {
		case tc.has == "" && err != nil:
			t.Errorf("CheckImages(%v): %v", tc.images, err)
		case tc.has != "" && (err == nil || !strings.Contains(err.Error(), tc.has)):
			t.Errorf("CheckImages(%v) = %v, want an error naming %s", tc.images, err, tc.has)
		}
	}
}

func TestLocalProviderIsDefault(t *testing.T) {
	c, err := New(Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Mode() != ServersLocal || len(c.Images()) != 0 {
		t.Errorf("mode %q, images %v", c.Mode(), c.Images())
	}
	if _, err := New(Options{TempDir: t.TempDir(), Servers: "nowhere"}); err == nil || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("an unknown mode: %v", err)
	}
}
