package scenarios_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/scenarios"
)

// TestBackendOptions: each backend decodes its own block strictly; a
// problem names its line and the keys the backend takes.
func TestBackendOptions(t *testing.T) {
	const fenced = "name: x\nbackend: redis-fenced\n"
	tests := []struct {
		name string
		in   string
		line int    // 0: no error
		has  string // a word the problem must name
	}{
		{"fence_start given", fenced + "backend_options:\n  redis-fenced: {fence_start: 32}\n", 0, ""},
		{"fence_start zero", fenced + "backend_options:\n  redis-fenced: {fence_start: 0}\n", 0, ""},
		{"an empty block", fenced + "backend_options:\n  redis-fenced: {}\n", 0, ""},
		{"a key the backend does not take", fenced + "backend_options:\n  redis-fenced:\n    fence_begin: 3\n", 5, "it takes: wait_replicas, fence_start"},
		{"a wrong type", fenced + "backend_options:\n  redis-fenced:\n    fence_start: many\n", 5, "\"many\" is not a whole number"},
		{"a negative fence", fenced + "backend_options:\n  redis-fenced: {fence_start: -1}\n", 4, "fence_start must be 0 or more"},
		{"an unknown backend", fenced + "backend_options:\n  redis-fancy: {fence_start: 1}\n", 4, "redis-fancy"},
		{"a backend the scenario does not run", fenced + "backends: [redis-fenced]\nbackend_options:\n  redis-token: {wait_replicas: 0}\n", 5, "does not run redis-token"},
		{"replicas without sentinel", "name: x\nbackend: redis-token\nbackend_options:\n  redis-token: {wait_replicas: 1}\n", 4, "needs `redis: sentinel`"},
		{"replicas with sentinel", "name: x\nbackend: redis-token\nredis: sentinel\nbackend_options:\n  redis-token: {wait_replicas: 1}\n", 0, ""},
		{"a backend that takes none", "name: x\nbackend: mutex\nbackend_options:\n  mutex: {fast: true}\n", 4, "mutex takes no options"},
		{"not a mapping", fenced + "backend_options: [redis-fenced]\n", 3, "mapping of backend names"},
		{"the old top-level key", fenced + "wait_replicas: 1\n", 3, "backend_options: {redis-token: {wait_replicas: N}}"},
		{"a listed backend", "name: x\nbackend: redis-token\nbackends: [redis-token, redis-fenced]\nbackend_options:\n  redis-fenced: {fence_start: 5}\n", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scenarios.Parse([]byte(tc.in), "f.yaml")
			if tc.line == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want a problem at line %d naming %q", tc.line, tc.has)
			}
			if !errors.Is(err, scenarios.ErrInvalid) {
				t.Errorf("%v does not wrap ErrInvalid", err)
			}
			if want := "f.yaml:" + strconv.Itoa(tc.line) + ":"; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("%v: want it to start %q", err, want)
			}
			if !strings.Contains(err.Error(), tc.has) {
				t.Errorf("%v: want it to name %q", err, tc.has)
			}
		})
	}
}

// TestBackendOptionsReachTheBackend: the decoded block is the backend's
// own type, the effective scenario writes the run's backend's options out
// (defaults included), and it loads again to the same options.
func TestBackendOptionsReachTheBackend(t *testing.T) {
	s, err := scenarios.Builtin("kleppmann-fenced")
	if err != nil {
		t.Fatal(err)
	}
	o, ok := s.Options("redis-fenced").(*backends.FencedOptions)
	if !ok || o.FenceStart != 32 {
		t.Fatalf("Options(redis-fenced) = %#v, want *FencedOptions with fence_start 32", s.Options("redis-fenced"))
	}
	if o, ok := s.Options("redis-token").(*backends.RedisOptions); !ok || o.WaitReplicas != 0 {
		t.Errorf("Options(redis-token) = %#v, want its defaults", s.Options("redis-token"))
	}
	if s.Options("mutex") != nil {
		t.Errorf("mutex takes no options, got %#v", s.Options("mutex"))
	}
	tok := *s
	tok.Backend, tok.Backends, tok.BackendOptions = "redis-token", nil, nil
	data, err := tok.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "redis-token:\n    wait_replicas: 0") {
		t.Errorf("the effective scenario leaves out the backend's defaults:\n%s", data)
	}
	data, err = s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	again, err := scenarios.Parse(data, "scenario.yaml")
	if err != nil {
		t.Fatalf("the effective scenario does not load: %v\n%s", err, data)
	}
	if o := again.Options("redis-fenced").(*backends.FencedOptions); o.FenceStart != 32 {
		t.Errorf("reloaded fence_start = %d, want 32", o.FenceStart)
	}
}

// TestServerKinds: a run's server kinds are its backend's, or for exec
// the ones exec.servers names (redis by default) — not every kind exec
// could start.
func TestServerKinds(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"name: x\nbackend: redis-token\n", []string{"redis"}},
		{"name: x\nbackend: mutex\n", []string{}},
		{"name: x\nbackend: exec\nexec: {command: [prog]}\n", []string{"redis"}},
		{"name: x\nbackend: exec\nexec: {command: [prog], servers: [postgres, etcd]}\n", []string{"postgres", "etcd"}},
	}
	for _, tc := range tests {
		s, err := scenarios.Parse([]byte(tc.in), "f.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if got := s.ServerKinds(); !slices.Equal(got, tc.want) {
			t.Errorf("%q: ServerKinds = %v, want %v", tc.in, got, tc.want)
		}
	}
}
