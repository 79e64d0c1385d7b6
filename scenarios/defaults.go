package scenarios

import (
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/workload"
)

// suitedResource is res, unless the backend works only with other
// resources (pg-optimistic: postgres), when it is the backend's first.
// Only a resource nobody asked for is replaced this way.
func suitedResource(backend, res string) string {
	if info, _, err := backends.Lookup(backend); err == nil && len(info.Resources) > 0 && !contains(info.Resources, res) {
		return info.Resources[0]
	}
	return res
}

// applyDefaults fills unset fields.
func (s *Scenario) applyDefaults() {
	if s.Resource == "" {
		s.Resource = suitedResource(s.Backend, workload.ResourceMemory)
	}
	if s.Fencing == "" {
		s.Fencing = workload.FenceNone
	}
	if s.Clients == 0 {
		s.Clients = 2
	}
	if s.Keys == 0 {
		s.Keys = 1
	}
	if s.TTL == 0 {
		s.TTL = Duration(time.Second)
	}
	if s.Hold == 0 {
		s.Hold = Duration(50 * time.Millisecond)
	}
	if s.Duration == 0 {
		s.Duration = Duration(5 * time.Second)
	}
	if s.Timeout == 0 {
		s.Timeout = Duration(500 * time.Millisecond)
	}
	if s.ThinkMin == 0 && s.ThinkMax == 0 {
		s.ThinkMin, s.ThinkMax = Duration(5*time.Millisecond), Duration(25*time.Millisecond)
	}
	if s.Seed == 0 {
		s.Seed = 1
	}
	if len(s.Checkers) == 0 {
		s.Checkers = append([]string(nil), checker.All...)
	}
}
