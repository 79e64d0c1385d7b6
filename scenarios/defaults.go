package scenarios

import (
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

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

// fieldSet holds the top-level fields a file gives a value. A field given
// no value ("hold:", YAML's null) is left out.
type fieldSet map[string]bool

// givenFields reads the top-level fields of a parsed file.
func givenFields(root *yaml.Node) fieldSet {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	given := fieldSet{}
	if n.Kind != yaml.MappingNode {
		return given
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if v := n.Content[i+1]; !(v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null") {
			given[n.Content[i].Value] = true
		}
	}
	return given
}

// Defaults of the fields a file leaves out.
const (
	defaultClients  = 2
	defaultKeys     = 1
	defaultTTL      = Duration(time.Second)
	defaultHold     = Duration(50 * time.Millisecond)
	defaultDuration = Duration(5 * time.Second)
	defaultTimeout  = Duration(500 * time.Millisecond)
	defaultThinkMin = Duration(5 * time.Millisecond)
	defaultThinkMax = Duration(25 * time.Millisecond)
	defaultSeed     = 1
)

// applyDefaults fills the fields the file left out. A field it gave keeps
// its value, zero included: hold: 0s is no work at all, and ttl: 0s is
// refused by Validate rather than replaced. Think times: 5ms to 25ms when
// both are left out; think_max alone leaves think_min 0; think_min alone
// makes think_max the larger of 25ms and think_min.
func (s *Scenario) applyDefaults(given fieldSet) {
	s.fillOptions()
	s.programDefaults()
	if !given["resource"] {
		s.Resource = suitedResource(s.Backend, workload.ResourceMemory)
	}
	if !given["fencing"] {
		s.Fencing = workload.FenceNone
	}
	if !given["clients"] {
		s.Clients = defaultClients
	}
	if !given["keys"] {
		s.Keys = defaultKeys
	}
	if !given["ttl"] {
		s.TTL = defaultTTL
	}
	if !given["hold"] {
		s.Hold = defaultHold
	}
	if !given["duration"] {
		s.Duration = defaultDuration
	}
	if !given["timeout"] {
		s.Timeout = defaultTimeout
	}
	switch {
	case !given["think_min"] && !given["think_max"]:
		s.ThinkMin, s.ThinkMax = defaultThinkMin, defaultThinkMax
	case !given["think_max"]:
		s.ThinkMax = max(defaultThinkMax, s.ThinkMin)
	}
	if !given["seed"] {
		s.Seed = defaultSeed
	}
	if !given["redis"] {
		s.Redis = backends.RedisSingle
	}
	if !given["checkers"] {
		s.Checkers = append([]string(nil), checker.All...)
	}
	s.fillKinds()
}

// checkGiven refuses a zero the file gave where zero means nothing and
// Validate, which also judges scenarios made in Go, lets it through.
func (s *Scenario) checkGiven(given fieldSet) error {
	bad := func(field, format string, a ...any) error {
		return &fieldError{field: field, msg: fmt.Sprintf(format, a...)}
	}
	switch {
	case given["redis"] && s.Redis == "":
		return bad("redis", "redis: an empty setup (single or sentinel; leave it out for single)")
	case given["checkers"] && len(s.Checkers) == 0:
		return bad("checkers", "checkers: an empty list checks nothing (leave it out for all: %s)", strings.Join(checker.All, ", "))
	case given["backends"] && len(s.Backends) == 0:
		return bad("backends", "backends: an empty list applies to no backend (leave it out for every backend)")
	}
	return nil
}
