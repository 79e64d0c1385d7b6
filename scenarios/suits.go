package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/cluster"
)

// Suits selects backends by what they are (a scenario file's suits:): a
// backend suits when it runs on servers of Kinds only and has every
// ability Needs names (docs/scenario-file.md).
type Suits struct {
	// Kinds are kinds of server (the registry's: redis, postgres, etcd,
	// zookeeper...); a backend suits when every server it runs is of one
	// of them. Empty: any.
	Kinds []string `yaml:"kinds,omitempty"`
	// Needs are abilities (backends.Abilities: fencing, lease, quorum,
	// in-tx, sentinel, lock-free) a backend must all have.
	Needs []string `yaml:"needs,omitempty"`
}

// Applies reports whether the scenario applies to the backend named
// name: it is in Backends (when listed) and suits Suits (when given).
func (s *Scenario) Applies(name string) bool {
	if len(s.Backends) > 0 && !slices.Contains(s.Backends, name) {
		return false
	}
	if s.Suits == nil {
		return true
	}
	info, _, err := backends.Lookup(name)
	return err == nil && info.Suits(s.Suits.Kinds, s.Suits.Needs)
}

// AppliesTo lists the registered backends the scenario applies to, or nil
// when it says nothing (every backend).
func (s *Scenario) AppliesTo() []string {
	if len(s.Backends) == 0 && s.Suits == nil {
		return nil
	}
	out := []string{}
	for _, b := range backends.Names() {
		if s.Applies(b) {
			out = append(out, b)
		}
	}
	return out
}

// chosenBackends says which backends the scenario applies to, in words
// ("redlock, redsync").
func (s *Scenario) chosenBackends() string {
	return strings.Join(s.AppliesTo(), ", ")
}

// validateSuits refuses an unknown kind or ability, and a selection no
// registered backend suits.
func (s *Scenario) validateSuits() error {
	if s.Suits == nil {
		return nil
	}
	bad := func(key, msg string, args ...any) error {
		return &fieldError{field: "suits", path: []string{key}, msg: "suits." + key + ": " + fmt.Sprintf(msg, args...)}
	}
	if len(s.Suits.Kinds) == 0 && len(s.Suits.Needs) == 0 {
		return &fieldError{field: "suits", msg: "suits: names no kind and no ability (leave it out for every backend)"}
	}
	for _, k := range s.Suits.Kinds {
		if _, ok := cluster.LookupKind(k); !ok {
			return bad("kinds", "%q is not a kind of server (known: %s)", k, strings.Join(cluster.KindNames(), ", "))
		}
	}
	for _, a := range s.Suits.Needs {
		if !slices.Contains(backends.Abilities(), a) {
			return bad("needs", "%q is not an ability (known: %s)", a, strings.Join(backends.Abilities(), ", "))
		}
	}
	if len(s.AppliesTo()) == 0 {
		return &fieldError{field: "suits", msg: "suits: no backend runs on " + orDefault(strings.Join(s.Suits.Kinds, ", "), "any server") +
			" with " + orDefault(strings.Join(s.Suits.Needs, ", "), "no ability asked") + " (and is in backends:)"}
	}
	return nil
}
