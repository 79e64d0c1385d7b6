package scenarios_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/scenarios"
)

// TestNames: a scenario's name becomes a directory of the store
// (store/<scenario>/<backend>/...), so it must be a plain name.
func TestNames(t *testing.T) {
	long := strings.Repeat("a", 100)
	tests := []struct {
		name string
		yaml string // the value as written after "name: "
		ok   bool
		has  string // what the error must say
	}{
		{"plain", "my-pause_2", true, ""},
		{"dots inside", "a.b..c", true, ""},
		{"100 characters", long, true, ""},
		{"parent directory", "../x", false, "plain"},
		{"deep escape", "../../../tmp/x", false, "plain"},
		{"a slash", "a/b", false, "plain"},
		{"a backslash", `'a\b'`, false, "plain"},
		{"absolute", "/tmp/x", false, "plain"},
		{"dot first", ".hidden", false, "plain"},
		{"dot", "'.'", false, "plain"},
		{"dot dot", "'..'", false, "plain"},
		{"a space", "'a b'", false, "plain"},
		{"not ASCII", "café", false, "plain"},
		{"escape character", `"x\x1b[31m"`, false, "plain"},
		{"newline", `"a\nb"`, false, "plain"},
		{"101 characters", long + "a", false, "100"},
		{"reserved latest", "latest", false, "latest"},
		{"reserved matrix", "matrix", false, "matrix"},
		{"reserved on a case-insensitive disk", "Latest", false, "latest"},
		{"empty", `""`, false, "name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := "clients: 2\nname: " + tc.yaml + "\nbackend: mutex\n"
			s, err := scenarios.Parse([]byte(in), "f.yaml")
			if tc.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if s.Name != strings.Trim(tc.yaml, `'"`) {
					t.Errorf("name %q", s.Name)
				}
				return
			}
			checkRefused(t, in, 2, tc.has)
			if err != nil && strings.ContainsFunc(err.Error(), func(r rune) bool { return r < ' ' || r == 0x7f }) {
				t.Errorf("error %q carries a control character", err)
			}
		})
	}
}

// TestNamesValidate: a scenario made in Go (runner.Run validates it) is held
// to the same rule, and so is a backend name.
func TestNamesValidate(t *testing.T) {
	tests := []struct {
		field string
		set   func(*scenarios.Scenario)
	}{
		{"name", func(s *scenarios.Scenario) { s.Name = "../x" }},
		{"name", func(s *scenarios.Scenario) { s.Name = "matrix" }},
		{"backend", func(s *scenarios.Scenario) { s.Backend = "../mutex" }},
		{"backends", func(s *scenarios.Scenario) { s.Backends = []string{"mutex", "a/b"} }},
	}
	for _, tc := range tests {
		s, err := scenarios.Builtin("baseline")
		if err != nil {
			t.Fatal(err)
		}
		tc.set(s)
		err = s.Validate()
		if !errors.Is(err, scenarios.ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: Validate() = %v", tc.field, err)
		}
	}
}

// checkRefused parses in as f.yaml and wants one line naming line and has.
func checkRefused(t *testing.T, in string, line int, has string) {
	t.Helper()
	s, err := scenarios.Parse([]byte(in), "f.yaml")
	if err == nil {
		t.Fatalf("accepted: hold %s ttl %s clients %d keys %d", s.Hold, s.TTL, s.Clients, s.Keys)
	}
	if !errors.Is(err, scenarios.ErrInvalid) {
		t.Errorf("errors.Is(%v, ErrInvalid) is false", err)
	}
	m := errLine.FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("error %q is not one line of the form f.yaml:<line>: invalid scenario: <problem>", err)
	}
	if m[1] != strconv.Itoa(line) {
		t.Errorf("error %q names line %s, want %d", err, m[1], line)
	}
	if !strings.Contains(m[2], has) {
		t.Errorf("error %q does not name %q", err, has)
	}
}
