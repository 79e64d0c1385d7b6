package scenarios_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/scenarios"
)

// TestExplicitZero: a zero written in the file means zero where zero makes
// sense; a field left out keeps its default.
func TestExplicitZero(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name                 string
		in                   string
		hold, thinkMin, tMax time.Duration
		seed                 int64
	}{
		{"all left out", base, 50 * ms, 5 * ms, 25 * ms, 1},
		{"hold 0s", base + "hold: 0s\n", 0, 5 * ms, 25 * ms, 1},
		{"hold bare 0", base + "hold: 0\n", 0, 5 * ms, 25 * ms, 1},
		{"think 0s..0s", base + "think_min: 0s\nthink_max: 0s\n", 50 * ms, 0, 0, 1},
		{"hold and think 0", base + "hold: 0s\nthink_min: 0s\nthink_max: 0s\n", 0, 0, 0, 1},
		{"think_max alone keeps think_min 0 as before", base + "think_max: 10ms\n", 50 * ms, 0, 10 * ms, 1},
		{"seed 0", base + "seed: 0\n", 50 * ms, 5 * ms, 25 * ms, 0},
		{"a null value is left out", base + "hold:\nseed:\n", 50 * ms, 5 * ms, 25 * ms, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := scenarios.Parse([]byte(tc.in), "f.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if s.Hold.D() != tc.hold || s.ThinkMin.D() != tc.thinkMin || s.ThinkMax.D() != tc.tMax ||
				s.Seed != tc.seed {
				t.Errorf("hold %s think %s..%s seed %d, want %s %s..%s %d",
					s.Hold, s.ThinkMin, s.ThinkMax, s.Seed,
					tc.hold, tc.thinkMin, tc.tMax, tc.seed)
			}
			// The effective scenario (scenario.yaml in the store) keeps its zeros.
			data, err := s.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			back, err := scenarios.Parse(data, "scenario.yaml")
			if err != nil {
				t.Fatalf("Parse(Marshal()): %v\n%s", err, data)
			}
			if back.Hold != s.Hold || back.ThinkMin != s.ThinkMin || back.ThinkMax != s.ThinkMax || back.Seed != s.Seed {
				t.Errorf("round trip: hold %s think %s..%s seed %d, want %s %s..%s %d\n%s",
					back.Hold, back.ThinkMin, back.ThinkMax, back.Seed, s.Hold, s.ThinkMin, s.ThinkMax, s.Seed, data)
			}
		})
	}
}

// TestExplicitZeroRefused: a zero where zero means nothing is refused with
// the file, the line and the field, never replaced by the default.
func TestExplicitZeroRefused(t *testing.T) {
	tests := []struct {
		name string
		in   string
		line int
		has  string
	}{
		{"ttl 0s", base + "ttl: 0s\n", 3, "ttl"},
		{"ttl bare 0", base + "clients: 2\nttl: 0\n", 4, "ttl"},
		{"duration 0s", base + "duration: 0s\n", 3, "duration"},
		{"timeout 0s", base + "timeout: 0s\n", 3, "timeout"},
		{"clients 0", base + "clients: 0\n", 3, "clients"},
		{"keys 0", base + "keys: 0\n", 3, "keys"},
		{"etcd_members 0", base + "etcd_members: 0\n", 3, "etcd_members"},
		{"zookeeper_members 0", base + "zookeeper_members: 0\n", 3, "zookeeper_members"},
		{"zookeeper_members 2", base + "zookeeper_members: 2\n", 3, "members must be 1 or 3"},
		{"etcd members 0", base + "etcd: {members: 0}\n", 3, "etcd: members must be from 1 to 7"},
		{"zookeeper members 0 in a block", base + "zookeeper:\n  members: 0\n", 4, "zookeeper: members must be 1 or 3, not 0"},
		{"empty resource", base + "resource: \"\"\n", 3, "resource"},
		{"empty fencing", base + "fencing: \"\"\n", 3, "fencing"},
		{"empty redis", base + "redis: \"\"\n", 3, "redis"},
		{"empty checkers", base + "checkers: []\n", 3, "checkers"},
		{"empty backends", base + "backends: []\n", 3, "backends"},
		{"empty name", "name: \"\"\nbackend: mutex\n", 1, "name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkRefused(t, tc.in, tc.line, tc.has)
		})
	}
}

// TestApplyZeroAndNegative: a command-line zero means zero where it makes
// sense and is refused where it does not; a negative duration is refused.
func TestApplyZeroAndNegative(t *testing.T) {
	s, err := scenarios.Builtin("baseline")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(scenarios.Overrides{Hold: ptr(time.Duration(0)), Seed: ptr(int64(0))}); err != nil {
		t.Fatalf("--hold 0s --seed 0: %v", err)
	}
	if s.Hold != 0 || s.Seed != 0 {
		t.Errorf("--hold 0s --seed 0 gave hold %s seed %d", s.Hold, s.Seed)
	}
	data, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if back, err := scenarios.Parse(data, "scenario.yaml"); err != nil || back.Hold != 0 || back.Seed != 0 {
		t.Errorf("scenario.yaml of --hold 0s --seed 0 reads back as %+v, %v\n%s", back, err, data)
	}

	neg := -time.Second
	bad := []struct {
		name string
		o    scenarios.Overrides
		flag string
	}{
		{"negative hold", scenarios.Overrides{Hold: &neg}, "--hold"},
		{"negative ttl", scenarios.Overrides{TTL: &neg}, "--ttl"},
		{"zero ttl", scenarios.Overrides{TTL: ptr(time.Duration(0))}, "--ttl"},
		{"negative duration", scenarios.Overrides{Duration: &neg}, "--duration"},
		{"negative timeout", scenarios.Overrides{Timeout: &neg}, "--timeout"},
		{"zero timeout", scenarios.Overrides{Timeout: ptr(time.Duration(0))}, "--timeout"},
		{"negative clients", scenarios.Overrides{Clients: ptr(-1)}, "--clients"},
		{"negative nemesis interval", scenarios.Overrides{Nemesis: ptr("pause"), NemesisInterval: &neg}, "--nemesis-interval"},
		{"zero nemesis interval", scenarios.Overrides{Nemesis: ptr("pause"), NemesisInterval: ptr(time.Duration(0))}, "--nemesis-interval"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := scenarios.Builtin("baseline")
			err := s.Apply(tc.o)
			if err == nil {
				t.Fatalf("accepted: hold %s ttl %s", s.Hold, s.TTL)
			}
			if !errors.Is(err, scenarios.ErrInvalid) {
				t.Errorf("errors.Is(%v, ErrInvalid) is false", err)
			}
			if !strings.Contains(err.Error(), tc.flag+":") {
				t.Errorf("error %q does not name %s", err, tc.flag)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is more than one line", err)
			}
		})
	}
}

// TestValidateNegative: a scenario built in Go, not read from a file, is
// held to the same rules.
func TestValidateNegative(t *testing.T) {
	for _, field := range []string{"hold", "think_min", "think_max"} {
		t.Run(field, func(t *testing.T) {
			s, err := scenarios.Builtin("baseline")
			if err != nil {
				t.Fatal(err)
			}
			switch field {
			case "hold":
				s.Hold = scenarios.Duration(-time.Millisecond)
			case "think_min":
				s.ThinkMin = scenarios.Duration(-time.Millisecond)
			case "think_max":
				s.ThinkMin, s.ThinkMax = 0, scenarios.Duration(-time.Millisecond)
			}
			err = s.Validate()
			if !errors.Is(err, scenarios.ErrInvalid) || !strings.HasPrefix(err.Error(), field) {
				t.Errorf("Validate() = %v, want an error about %s", err, field)
			}
		})
	}
}
