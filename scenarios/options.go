package scenarios

import (
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/backends"
)

// BackendOptions are a scenario's backend_options: each backend's own
// settings, by backend name, decoded strictly by that backend
// (backends.DecodeOptions) as the file is read:
//
//	backend_options:
//	  redis-fenced: {fence_start: 32}
type BackendOptions map[string]backends.Options

// UnmarshalYAML decodes each backend's block into that backend's options,
// refusing an unknown backend or a key the backend does not take, at its line.
func (b *BackendOptions) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: backend_options is a mapping of backend names to their options (backend_options: {redis-fenced: {fence_start: 32}})", n.Line)
	}
	out := BackendOptions{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if _, _, err := backends.Lookup(k.Value); err != nil {
			return fmt.Errorf("line %d: backend_options: %w", k.Line, err)
		}
		if _, dup := out[k.Value]; dup {
			return fmt.Errorf("line %d: backend_options: %s is given twice", k.Line, k.Value)
		}
		o, err := backends.DecodeOptions(k.Value, v)
		if err != nil {
			if _, ok := err.(*yaml.TypeError); ok {
				return err
			}
			return fmt.Errorf("backend_options: %w", err)
		}
		if o != nil {
			out[k.Value] = o
		}
	}
	*b = out
	return nil
}

// Options returns backend's options in this scenario: the file's block for
// it, or the backend's defaults (nil for a backend that takes none).
func (s *Scenario) Options(backend string) backends.Options {
	if o, ok := s.BackendOptions[backend]; ok {
		return o
	}
	o, _ := backends.DecodeOptions(backend, nil)
	return o
}

// fillOptions gives the run's backend its default options when the file
// gives it none, so the effective scenario shows them.
func (s *Scenario) fillOptions() {
	if _, ok := s.BackendOptions[s.Backend]; ok {
		return
	}
	if o, err := backends.DecodeOptions(s.Backend, nil); err == nil && o != nil {
		if s.BackendOptions == nil {
			s.BackendOptions = BackendOptions{}
		}
		s.BackendOptions[s.Backend] = o
	}
}

// validateOptions checks each block against the run's setup, and refuses
// a block for a backend the scenario does not run (a typo would otherwise
// go unnoticed).
func (s *Scenario) validateOptions() error {
	env := s.BackendEnv(nil)
	for _, name := range sortedKeys(s.BackendOptions) {
		field := &fieldError{field: "backend_options", path: []string{name}}
		if name != s.Backend && !s.Applies(name) {
			field.msg = fmt.Sprintf("backend_options: the scenario does not run %s (backend: %s)", name, s.Backend)
			return field
		}
		if err := s.BackendOptions[name].Validate(env); err != nil {
			field.msg = fmt.Sprintf("backend_options.%s: %v", name, err)
			return field
		}
	}
	return nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
