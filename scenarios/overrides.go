package scenarios

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Overrides are command-line settings that replace a scenario's own.
type Overrides struct {
	Backend, Resource, Fencing   *string
	Clients, Keys                *int
	TTL, Hold, Duration, Timeout *time.Duration
	Seed                         *int64
	// Nemesis replaces the plan: "none", or a comma-separated random mix.
	Nemesis         *string
	NemesisInterval *time.Duration
}

// Apply sets the overrides on s and validates the result.
func (s *Scenario) Apply(o Overrides) error {
	if o.Backend != nil {
		s.Backend = *o.Backend
	}
	if o.Resource != nil {
		s.Resource = *o.Resource
	} else if o.Backend != nil {
		s.Resource = suitedResource(s.Backend, s.Resource)
	}
	if o.Fencing != nil {
		s.Fencing = *o.Fencing
	}
	if o.Clients != nil {
		s.Clients = *o.Clients
	}
	if o.Keys != nil {
		s.Keys = *o.Keys
	}
	if o.TTL != nil {
		s.TTL = Duration(*o.TTL)
	}
	if o.Hold != nil {
		s.Hold = Duration(*o.Hold)
	}
	if o.Duration != nil {
		s.Duration = Duration(*o.Duration)
	}
	if o.Timeout != nil {
		s.Timeout = Duration(*o.Timeout)
	}
	if o.Seed != nil {
		s.Seed = *o.Seed
	}
	if o.Nemesis != nil {
		s.Nemesis = Nemesis{}
		if n := strings.TrimSpace(*o.Nemesis); n != "" && n != "none" {
			r := &Random{Interval: Duration(2 * time.Second), Min: Duration(500 * time.Millisecond), Max: Duration(2 * time.Second)}
			for _, f := range strings.Split(n, ",") {
				r.Faults = append(r.Faults, strings.TrimSpace(f))
			}
			s.Nemesis.Random = r
		}
	}
	if o.NemesisInterval != nil && s.Nemesis.Random != nil {
		s.Nemesis.Random.Interval = Duration(*o.NemesisInterval)
	}
	if err := s.Validate(); err != nil {
		var fe *fieldError
		if errors.As(err, &fe) {
			return fmt.Errorf("%w: --%s: %s", ErrInvalid, strings.ReplaceAll(fe.field, "_", "-"), fe.msg)
		}
		return err
	}
	return nil
}
