package runner

import (
	"testing"

	"github.com/locktorture/locktorture/scenarios"
)

// TestSettingsShowEverySetting: the report's settings table comes from the
// effective scenario.yaml, so kleppmann-fenced shows fence_start and the
// settings the old hand-written table left out.
func TestSettingsShowEverySetting(t *testing.T) {
	sc := builtin(t, "kleppmann-fenced", scenarios.Overrides{})
	got := settings(sc)
	for k, want := range map[string]string{"fence_start": "32", "backend": "redis-fenced", "fencing": "all", "ttl": "1s", "redis": "single"} {
		if got[k] != want {
			t.Errorf("settings[%q] = %q, want %q (all: %v)", k, got[k], want, got)
		}
	}
	for _, k := range []string{"persistence", "nemesis", "checkers", "seed", "hold", "think_min"} {
		if _, ok := got[k]; !ok {
			t.Errorf("settings leave out %q: %v", k, got)
		}
	}
	if _, ok := got["description"]; ok {
		t.Errorf("the description is not a setting")
	}
}
