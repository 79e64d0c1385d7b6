package scenarios

import (
	"slices"
	"strings"
	"testing"
)

// selectedBefore is what each built-in scenario applied to when every one
// listed its backends by name (nil: every backend). Selecting by ability
// (suits:) must keep it.
var selectedBefore = map[string][]string{
	"baseline":                 nil,
	"chaos":                    {"redis-naive", "redis-renew", "redis-token", "zookeeper"},
	"chaos-pg":                 {"pg-advisory-xact", "pg-skip-locked"},
	"clock":                    nil,
	"delay":                    nil,
	"etcd-pause":               {"etcd"},
	"etcd-pause-fenced":        {"etcd"},
	"failover":                 {"redis-fenced", "redis-naive", "redis-renew", "redis-token", "redislock"},
	"inflight-delay":           {"redis-naive", "redis-token", "redlock"},
	"kill-session":             nil,
	"kleppmann-fenced":         {"redis-fenced"},
	"kleppmann-pause":          {"redis-fenced", "redis-naive", "redis-token"},
	"lost-reply":               nil,
	"partition":                nil,
	"pause":                    nil,
	"pg-idle-timeout":          {"pg-advisory"},
	"pg-pause":                 {"pg-advisory", "pg-advisory-xact", "pg-skip-locked"},
	"pg-terminate":             {"pg-advisory"},
	"pg-terminate-xact":        {"pg-advisory-xact", "pg-skip-locked"},
	"redis-py-baseline":        {"exec"},
	"redis-py-kleppmann-pause": {"exec"},
	"redlock-clock-jump":       {"redlock", "redsync"},
	"redlock-restart":          {"redlock", "redsync"},
	"redlock-restart-delayed":  {"redlock", "redsync"},
	"renew-pause":              {"redis-renew"},
	"restart":                  nil,
	"zk-leader-partition":      {"zookeeper"},
	"zk-partition":             {"zookeeper"},
	"zk-pause":                 {"zookeeper"},
	"zk-pause-fenced":          {"zookeeper"},
}

// knownBefore are the backends there were then: a backend registered
// since may suit a scenario by its abilities (that is the point).
var knownBefore = []string{"etcd", "exec", "mutex", "pg-advisory", "pg-advisory-xact", "pg-optimistic", "pg-skip-locked",
	"redis-fenced", "redis-naive", "redis-renew", "redis-token", "redislock", "redlock", "redsync", "zookeeper"}

// TestSuitsSelectAsBefore: every built-in scenario applies to the same
// backends (of those there were) as when each was listed by hand.
func TestSuitsSelectAsBefore(t *testing.T) {
	for _, name := range BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			want, ok := selectedBefore[name]
			if !ok {
				t.Skip("a scenario added since: nothing to compare")
			}
			s, err := Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			got := s.AppliesTo()
			if (got == nil) != (want == nil) {
				t.Fatalf("applies to %v, want %v", got, want)
			}
			got = slices.DeleteFunc(got, func(b string) bool { return !slices.Contains(knownBefore, b) })
			if !slices.Equal(got, want) {
				t.Fatalf("applies to %v, want %v", got, want)
			}
		})
	}
}

// TestSuitsRefused: a suits block naming an unknown kind or ability, or
// one no backend suits, is refused with the documented code.
func TestSuitsRefused(t *testing.T) {
	base := "name: x\nbackend: redis-token\n"
	tests := []struct {
		name, src, want string
	}{
		{"unknown kind", base + "suits: {kinds: [nope]}\n", "not a kind"},
		{"unknown ability", base + "suits: {needs: [nope]}\n", "not an ability"},
		{"empty", base + "suits: {}\n", "names no kind"},
		{"no backend", base + "suits: {kinds: [etcd], needs: [quorum]}\n", "no backend"},
		{"not_run of a suited backend", base + "suits: {kinds: [redis], needs: [quorum]}\nnot_run:\n  redlock: why\n", "also in backends"},
		{"unknown field", base + "suits: {kind: [redis]}\n", "kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src), "x.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one saying %q", err, tt.want)
			}
		})
	}
}

// TestSuitsAndBackendsBoth: with both, a backend must be in the list and
// suit the abilities.
func TestSuitsAndBackendsBoth(t *testing.T) {
	s, err := Parse([]byte("name: x\nbackend: redis-token\nbackends: [redis-token, redlock, etcd]\nsuits: {kinds: [redis]}\n"), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.AppliesTo(); !slices.Equal(got, []string{"redis-token", "redlock"}) {
		t.Fatalf("applies to %v", got)
	}
}
