// Package duration is a time.Duration as the scenario file writes it
// ("250ms", "2.5s", a bare 0): the scenario's own durations and those of
// a kind's settings block (postgres: {idle_session_timeout: 2s}) read and
// write alike.
package duration

import (
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration written as "1s", "250ms" in YAML; negative
// ones are refused.
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML parses "1s"-style durations, naming the line when it fails.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := Parse(n.Value)
	if err != nil || n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: bad duration %q (want e.g. 500ms, 2.5s)", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Parse parses a Go duration; a bare 0 is allowed, a negative one is not.
func Parse(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration: %w", err)
	}
	if v < 0 {
		return 0, fmt.Errorf("negative duration %s", s)
	}
	return v, nil
}
