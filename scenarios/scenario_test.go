package scenarios_test

import (
	"errors"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/scenarios"
)

func TestBuiltins(t *testing.T) {
	names := scenarios.BuiltinNames()
	for _, want := range []string{"baseline", "kleppmann-pause", "kleppmann-fenced"} {
		if !contains(names, want) {
			t.Errorf("BuiltinNames() = %v lacks %s", names, want)
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			s, err := scenarios.Builtin(name)
			if err != nil {
				t.Fatalf("Builtin: %v", err)
			}
			if s.Name != name {
				t.Errorf("file %s.yaml has name %q", name, s.Name)
			}
			if err := s.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
			if s.Description == "" {
				t.Error("no description")
			}
			if s.Expect.Valid == "" {
				t.Fatal("no expected verdict")
			}
			if _, err := checker.ParseValidity(s.Expect.Valid); err != nil {
				t.Error(err)
			}
			// Every backend the scenario applies to (or the one it names)
			// has an expectation.
			bs := s.Backends
			if len(bs) == 0 {
				bs = []string{s.Backend}
			}
			for _, b := range bs {
				if e := s.Expected(b); e.Valid == "" {
					t.Errorf("no expectation for backend %s", b)
				}
			}
			if s.Seed == 0 || s.Clients < 1 || s.Keys < 1 || len(s.Checkers) == 0 {
				t.Errorf("defaults not applied: %+v", s)
			}
		})
	}
}

func TestBuiltinNotFound(t *testing.T) {
	_, err := scenarios.Builtin("nope")
	if !errors.Is(err, scenarios.ErrNotFound) {
		t.Fatalf("got %v, want ErrNotFound", err)
	}
	for _, n := range append(scenarios.BuiltinNames(), "nope") {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not mention %s", err, n)
		}
	}
	// A name must not escape the embedded directory.
	if _, err := scenarios.Builtin("../scenario"); !errors.Is(err, scenarios.ErrNotFound) {
		t.Errorf("../scenario: got %v", err)
	}
}

const base = "name: x\nbackend: mutex\n"

var errLine = regexp.MustCompile(`^f\.yaml:(\d+): invalid scenario: (.+)$`)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		line int
		has  string // a word the problem must name
	}{
		{"unknown top-level field", base + "clients: 2\nbogus: 1\n", 4, "bogus"},
		{"unknown top-level field first", "colour: red\n" + base, 1, "colour"},
		{"unknown nested field in a step", base + "nemesis:\n  script:\n    - fault: pause\n      process: 0\n      for: 1s\n      colour: red\n", 8, "colour"},
		{"unknown field in random", base + "nemesis:\n  random:\n    faults: [pause]\n    every: 1s\n", 6, "every"},
		{"bad duration", base + "ttl: 1parsec\n", 3, "1parsec"},
		{"bad nested duration", base + "nemesis:\n  script:\n    - fault: pause\n      process: 0\n      for: soon\n", 7, "soon"},
		{"negative duration", base + "hold: -1s\n", 3, "-1s"},
		{"fence_start moved to backend_options", base + "fence_start: 32\n", 3, "backend_options: {redis-fenced: {fence_start: N}}"},
		{"unknown fencing mode", base + "fencing: sometimes\n", 3, "sometimes"},
		{"unknown backend", "name: x\nbackend: nope\n", 2, "nope"},
		{"missing backend", "name: x\nclients: 2\n", 1, "backend"},
		{"unknown resource", base + "resource: disk\n", 3, "disk"},
		{"negative clients", base + "clients: -1\n", 3, "-1"},
		{"too many clients", base + "\nclients: 1001\n", 4, "1001"},
		{"clients not a number", base + "clients: many\n", 3, "\"many\" is not a whole number"},
		{"checkers not a list", base + "checkers: mutex\n", 3, "\"mutex\" is not a list"},
		{"persistence not a bool", base + "persistence: maybe\n", 3, "\"maybe\" is not true or false"},
		{"a list where one value goes", base + "resource: [memory]\n", 3, "a list is not a single value"},
		{"unknown field named plainly", base + "bogus: 1\n", 3, "unknown field \"bogus\""},
		{"unknown field in postgres", base + "postgres:\n  fsync: off\n", 4, "postgres takes no setting \"fsync\""},
		{"unknown checker", base + "checkers: [mutex, psychic]\n", 3, "psychic"},
		{"unknown nemesis fault", base + "nemesis:\n  script:\n    - fault: meteor\n      process: 0\n      for: 1s\n", 5, "meteor"},
		{"unknown random fault", base + "nemesis:\n  random:\n    faults: [meteor]\n    interval: 1s\n", 3, "meteor"},
		{"step without for", base + "nemesis:\n  script:\n    - fault: pause\n      process: 0\n", 5, "for"},
		{"step with bad process", base + "clients: 2\nnemesis:\n  script:\n    - fault: pause\n      process: 2\n      for: 1s\n", 7, "process"},
		{"step with bad event", base + "nemesis:\n  script:\n    - fault: pause\n      process: 0\n      on: lunch\n      for: 1s\n", 7, "lunch"},
		{"bad expect verdict", base + "expect:\n  valid: maybe\n", 4, "maybe"},
		{"bad per-checker verdict", base + "expect:\n  checkers: {mutex: perhaps}\n", 4, "perhaps"},
		{"unknown expect backend", base + "expect:\n  valid: valid\n  backends:\n    nope: {valid: valid}\n", 6, "nope"},
		{"unknown expect resource", base + "expect:\n  valid: valid\n  backends:\n    redis-token/disk: {valid: valid}\n", 6, "disk"},
		{"unknown scoped expect backend", base + "expect:\n  valid: valid\n  backends:\n    nope/memory: {valid: valid}\n", 6, "nope"},
		{"unknown pooler", "name: x\nbackend: pg-advisory\npostgres_via: pgpool\n", 3, "pgpool"},
		{"unknown pool mode", "name: x\nbackend: pg-advisory\npostgres_via: pgbouncer\npool_mode: statement\n", 4, "statement"},
		{"pool mode without a pooler", "name: x\nbackend: pg-advisory\npool_mode: session\n", 3, "postgres: {via: pgbouncer}"},
		{"pool size zero", "name: x\nbackend: pg-advisory\npostgres_via: pgbouncer\npool_size: 0\n", 4, "pool_size"},
		{"tables through someone else's pooler", "name: x\nbackend: pg-skip-locked\npostgres_via: pgbouncer\nservers: external\nservers_file: s.yaml\n", 3, "search_path"},
		{"pooler with TLS", "name: x\nbackend: pg-advisory\npostgres_via: pgbouncer\nsecurity: tls\n", 3, "not supported yet"},
		{"pooler without PostgreSQL", base + "postgres_via: pgbouncer\n", 3, "nothing to put PgBouncer in front of"},
		{"think_max below think_min", base + "think_min: 10ms\nthink_max: 5ms\n", 4, "think_max"},
		{"mysql resource in a client process", "name: x\nbackend: mysql-for-update\nresource: mysql\nclient_mode: process\n", 4, "the mysql resource writes inside the lock's own transaction"},
		{"wait_timeout in parts of a second", "name: x\nbackend: mysql-get-lock\nbackend_options:\n  mysql-get-lock: {wait_timeout: 1500ms}\n", 4, "whole seconds"},
		{"empty file", "", 1, "empty"},
		{"only a comment", "# nothing here\n", 1, "empty"},
		{"not YAML", "name: [unclosed\n", 1, ""},
		{"YAML but not a mapping", "just a string\n", 1, ""},
		{"tab indentation", "name: x\n\tbackend: y\n", 2, "tab"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := scenarios.Parse([]byte(tc.in), "f.yaml")
			if err == nil {
				t.Fatalf("accepted: %+v", s)
			}
			if s != nil {
				t.Error("a scenario returned with the error")
			}
			if !errors.Is(err, scenarios.ErrInvalid) {
				t.Errorf("errors.Is(%v, ErrInvalid) is false", err)
			}
			m := errLine.FindStringSubmatch(err.Error())
			if m == nil {
				t.Fatalf("error %q is not one line of the form f.yaml:<line>: invalid scenario: <problem>", err)
			}
			if m[1] != strconv.Itoa(tc.line) {
				t.Errorf("error %q names line %s, want %d", err, m[1], tc.line)
			}
			if !strings.Contains(m[2], tc.has) {
				t.Errorf("error %q does not name %q", err, tc.has)
			}
		})
	}
}

func TestParseDefaults(t *testing.T) {
	s, err := scenarios.Parse([]byte(base), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Resource != "memory" || s.Fencing != "none" || s.Clients < 1 || s.Keys < 1 ||
		s.TTL.D() <= 0 || s.Duration.D() <= 0 || s.Timeout.D() <= 0 || s.Seed == 0 {
		t.Errorf("defaults: %+v", s)
	}
	if !reflect.DeepEqual(s.Checkers, checker.All) {
		t.Errorf("default checkers %v, want all %v", s.Checkers, checker.All)
	}
	if got := s.KeyNames(); len(got) != s.Keys || got[0] != "k0" {
		t.Errorf("KeyNames() = %v", got)
	}
	s2, err := scenarios.Parse([]byte(base+"hold: 2.5s\n"), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s2.Hold.D() != 2500*time.Millisecond || s2.TTL.D() != s.TTL.D() {
		t.Errorf("hold %s ttl %s", s2.Hold, s2.TTL)
	}
}

func ptr[T any](v T) *T { return &v }

func TestApply(t *testing.T) {
	s, err := scenarios.Builtin("kleppmann-pause")
	if err != nil {
		t.Fatal(err)
	}
	err = s.Apply(scenarios.Overrides{
		Backend:         ptr("mutex"),
		Fencing:         ptr("all"),
		Clients:         ptr(7),
		Keys:            ptr(3),
		TTL:             ptr(3 * time.Second),
		Hold:            ptr(time.Millisecond),
		Duration:        ptr(time.Minute),
		Seed:            ptr(int64(42)),
		Nemesis:         ptr("pause"),
		NemesisInterval: ptr(5 * time.Second),
	})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if s.Backend != "mutex" || s.Fencing != "all" || s.Clients != 7 || s.Keys != 3 || s.TTL.D() != 3*time.Second ||
		s.Hold.D() != time.Millisecond || s.Duration.D() != time.Minute || s.Seed != 42 {
		t.Errorf("overrides not applied: %+v", s)
	}
	if len(s.Nemesis.Script) != 0 || s.Nemesis.Random == nil || !reflect.DeepEqual(s.Nemesis.Random.Faults, []string{"pause"}) ||
		s.Nemesis.Random.Interval.D() != 5*time.Second {
		t.Errorf("nemesis override: %+v", s.Nemesis)
	}

	none, _ := scenarios.Builtin("kleppmann-pause")
	if err := none.Apply(scenarios.Overrides{Nemesis: ptr("none")}); err != nil {
		t.Fatal(err)
	}
	if !none.NemesisSchedule().Empty() {
		t.Errorf("--nemesis none left %+v", none.Nemesis)
	}

	// Nothing set changes nothing.
	a, _ := scenarios.Builtin("baseline")
	b, _ := scenarios.Builtin("baseline")
	if err := a.Apply(scenarios.Overrides{}); err != nil || !reflect.DeepEqual(a, b) {
		t.Errorf("empty overrides: err %v, changed %v", err, !reflect.DeepEqual(a, b))
	}

	bad := []struct {
		name string
		o    scenarios.Overrides
		flag string
	}{
		{"unknown backend", scenarios.Overrides{Backend: ptr("nope")}, "--backend"},
		{"unknown fencing", scenarios.Overrides{Fencing: ptr("sometimes")}, "--fencing"},
		{"unknown resource", scenarios.Overrides{Resource: ptr("disk")}, "--resource"},
		{"zero clients", scenarios.Overrides{Clients: ptr(0)}, "--clients"},
		{"zero keys", scenarios.Overrides{Keys: ptr(0)}, "--keys"},
		{"tiny ttl", scenarios.Overrides{TTL: ptr(time.Microsecond)}, "--ttl"},
		{"zero duration", scenarios.Overrides{Duration: ptr(time.Duration(0))}, "--duration"},
		{"unknown nemesis", scenarios.Overrides{Nemesis: ptr("pause,meteor")}, "--nemesis"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := scenarios.Builtin("kleppmann-pause")
			err := s.Apply(tc.o)
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, scenarios.ErrInvalid) {
				t.Errorf("errors.Is(%v, ErrInvalid) is false", err)
			}
			if !strings.Contains(err.Error(), tc.flag) {
				t.Errorf("error %q does not mention %s", err, tc.flag)
			}
		})
	}
}

func TestExpected(t *testing.T) {
	s, err := scenarios.Builtin("baseline")
	if err != nil {
		t.Fatal(err)
	}
	m := s.Expected("mutex")
	if m.Valid != "invalid" || m.Checkers["mutex"] != "invalid" {
		t.Errorf("baseline/mutex: %+v", m)
	}
	r := s.Expected("redis-token")
	if r.Valid != "valid" {
		t.Errorf("baseline/redis-token: %+v", r)
	}
	if r.Checkers["mutex"] == "invalid" {
		t.Error("the mutex backend's override leaked into redis-token")
	}

	// A synthetic file covering the merge rules.
	src := base + `expect:
  valid: invalid
  checkers: {mutex: invalid, lost-update: invalid}
  backends:
    redis-fenced:
      checkers: {lost-update: valid}
    redis-token:
      valid: invalid
    redis-naive:
      valid: valid
`
	sc, err := scenarios.Parse([]byte(src), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		backend  string
		valid    string
		checkers map[string]string
	}{
		{"mutex", "invalid", map[string]string{"mutex": "invalid", "lost-update": "invalid"}},       // default
		{"redis-fenced", "invalid", map[string]string{"mutex": "invalid", "lost-update": "valid"}},  // checker override merged
		{"redis-token", "invalid", map[string]string{"mutex": "invalid", "lost-update": "invalid"}}, // same verdict keeps detail
		{"redis-naive", "valid", map[string]string{}},                                               // a new verdict drops detail
	}
	for _, tc := range tests {
		e := sc.Expected(tc.backend)
		if e.Valid != tc.valid || !reflect.DeepEqual(e.Checkers, tc.checkers) {
			t.Errorf("Expected(%s) = %+v, want %s %v", tc.backend, e, tc.valid, tc.checkers)
		}
	}
	// Expected must not hand out the scenario's own map.
	sc.Expected("mutex").Checkers["mutex"] = "valid"
	if sc.Expect.Checkers["mutex"] != "invalid" {
		t.Error("Expected returned a map aliasing the scenario")
	}
}

// TestExpectedByResource: an entry "backend/resource" applies only when the
// run protects that resource, and wins over the backend's own entry.
func TestExpectedByResource(t *testing.T) {
	pg, err := scenarios.Builtin("pg-terminate")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		backend, resource, valid string
	}{
		{"pg-advisory", "memory", "invalid"},
		{"pg-advisory-xact", "memory", "invalid"}, // the scenario's default
		{"pg-advisory-xact", "postgres", "valid"}, // pg-advisory-xact/postgres
		{"pg-skip-locked", "postgres", "valid"},   // pg-skip-locked/postgres
		{"pg-advisory", "postgres", "invalid"},    // no scoped entry
	}
	for _, tc := range tests {
		sc := *pg
		sc.Resource = tc.resource
		if got := sc.Expected(tc.backend).Valid; got != tc.valid {
			t.Errorf("pg-terminate with %s on %s: expected %q, want %q", tc.backend, tc.resource, got, tc.valid)
		}
	}
	src := base + "expect:\n  valid: invalid\n  backends:\n    redis-token: {valid: valid}\n    redis-token/postgres: {valid: unknown}\n"
	sc, err := scenarios.Parse([]byte(src), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Expected("redis-token").Valid; got != "valid" {
		t.Errorf("on memory: %q, want the plain entry's valid", got)
	}
	sc.Resource = "postgres"
	if got := sc.Expected("redis-token").Valid; got != "unknown" {
		t.Errorf("on postgres: %q, want the scoped entry's unknown", got)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	var all []*scenarios.Scenario
	for _, n := range scenarios.BuiltinNames() {
		s, err := scenarios.Builtin(n)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, s)
	}
	// An effective scenario after overrides, with a random mix.
	s, _ := scenarios.Builtin("baseline")
	if err := s.Apply(scenarios.Overrides{Seed: ptr(int64(987654321)), Nemesis: ptr("pause"), TTL: ptr(1500 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	all = append(all, s)

	for _, s := range all {
		t.Run(s.Name, func(t *testing.T) {
			data, err := s.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			back, err := scenarios.Parse(data, "scenario.yaml")
			if err != nil {
				t.Fatalf("Parse(Marshal()): %v\n%s", err, data)
			}
			if !reflect.DeepEqual(s, back) {
				t.Errorf("round trip differs:\n got %+v\nwant %+v\n%s", back, s, data)
			}
			if !reflect.DeepEqual(s.NemesisSchedule(), back.NemesisSchedule()) {
				t.Error("nemesis schedules differ")
			}
		})
	}
}

func TestNemesisSchedule(t *testing.T) {
	s, err := scenarios.Builtin("kleppmann-pause")
	if err != nil {
		t.Fatal(err)
	}
	sch := s.NemesisSchedule()
	if len(sch.Script) != 1 {
		t.Fatalf("script %+v", sch.Script)
	}
	st := sch.Script[0]
	if p, ok := st.Params.(*nemesis.PauseParams); st.Fault != "pause" || !ok || p.EventProcess() != 0 || st.On != "read" || st.Duration != 2500*time.Millisecond {
		t.Errorf("step %+v", st)
	}
	if err := sch.Validate(nemesis.Shape{Clients: s.Clients}); err != nil {
		t.Error(err)
	}
	// The backends the built-ins name are registered.
	for _, n := range scenarios.BuiltinNames() {
		s, _ := scenarios.Builtin(n)
		for _, b := range append([]string{s.Backend}, s.Backends...) {
			if _, _, err := backends.Lookup(b); err != nil {
				t.Errorf("%s: %v", n, err)
			}
		}
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// TestApplyExec: --exec with a flag that contradicts it is refused naming
// both; on a scenario about another backend it gets that backend's
// servers (unless exec.servers says otherwise); Program names the script.
func TestApplyExec(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    scenarios.Overrides
		both []string
	}{
		{"a built-in backend", scenarios.Overrides{Exec: ptr("python3 my_kazoo_lock.py"), Backend: ptr("zookeeper")}, []string{"--exec", "--backend zookeeper"}},
		{"inproc clients", scenarios.Overrides{Exec: ptr("./lock"), ClientMode: ptr("inproc")}, []string{"--exec", "--client-mode inproc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := scenarios.Builtin("baseline")
			err := s.Apply(tc.o)
			if !errors.Is(err, scenarios.ErrInvalid) {
				t.Fatalf("Apply = %v, want ErrInvalid", err)
			}
			for _, w := range tc.both {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
	for _, tc := range []struct {
		scenario, exec string
		servers        []string
		program        string
	}{
		{"zk-pause", "python3 my_kazoo_lock.py", []string{"zookeeper"}, "my_kazoo_lock.py"},
		{"redlock-clock-jump", "/opt/bin/my-redlock --fast", []string{"redis", "redis", "redis", "redis", "redis"}, "my-redlock"},
		{"redis-py-baseline", "node lock.js", []string{"redis"}, "lock.js"},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			s, err := scenarios.Builtin(tc.scenario)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Apply(scenarios.Overrides{Exec: &tc.exec}); err != nil {
				t.Fatal(err)
			}
			if s.Backend != scenarios.ExecBackend || !reflect.DeepEqual(s.Exec.Servers, tc.servers) || s.Exec.Program() != tc.program {
				t.Errorf("backend %s, servers %v, program %q; want exec, %v, %q", s.Backend, s.Exec.Servers, s.Exec.Program(), tc.servers, tc.program)
			}
		})
	}
}
