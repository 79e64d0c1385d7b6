// Package scenarios defines the scenario file format (YAML), loads it
// strictly — an unknown field or a bad value is one error naming the file,
// the line and the problem — and embeds the built-in scenarios.
package scenarios

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/workload"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// Sentinel errors of this package.
var (
	// ErrInvalid is wrapped by every error about a scenario's content.
	ErrInvalid = errors.New("invalid scenario")
	// ErrNotFound is wrapped when no built-in scenario has the name.
	ErrNotFound = errors.New("unknown scenario")
)

// Duration is a time.Duration written as "1s", "250ms" in YAML.
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML parses "1s"-style durations, naming the line when it fails.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseDuration(n.Value)
	if err != nil || n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: bad duration %q (want e.g. 500ms, 2.5s)", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// ParseDuration parses a Go duration; a bare 0 is allowed.
func ParseDuration(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if v < 0 {
		return 0, fmt.Errorf("negative duration %s", s)
	}
	return v, nil
}

// Step is one scripted nemesis step.
type Step struct {
	// Fault names the nemesis ("pause").
	Fault string `yaml:"fault"`
	// Process is the client process the fault targets.
	Process *int `yaml:"process,omitempty"`
	// At is the offset from the run's start (or the earliest moment an
	// event-triggered step may fire).
	At Duration `yaml:"at,omitempty"`
	// On makes the step fire right after the target process's next
	// successful op of this kind: acquire, read, write or release.
	On string `yaml:"on,omitempty"`
	// For is how long the fault lasts (for kill: how long the server stays
	// down; 0 restarts it at once).
	For Duration `yaml:"for"`
	// Clients are more target client processes.
	Clients []int `yaml:"clients,omitempty"`
	// Servers are target servers: names, or letters in start order (A, B, ...).
	Servers []string `yaml:"servers,omitempty"`
	// Topology shapes a partition: isolate-client, isolate-server, cut, halves, ring.
	Topology string `yaml:"topology,omitempty"`
	// Direction of a link fault: both, upstream (requests), downstream (replies).
	Direction string `yaml:"direction,omitempty"`
	// Latency and Jitter of a latency fault.
	Latency Duration `yaml:"latency,omitempty"`
	Jitter  Duration `yaml:"jitter,omitempty"`
	// Jump moves a clock (negative: backwards); Rate makes it drift.
	Jump SignedDuration `yaml:"jump,omitempty"`
	Rate float64        `yaml:"rate,omitempty"`
}

// PostgresSettings are the server-side settings a scenario may give the
// run's PostgreSQL: they decide when the server itself ends a holder's
// session (and so frees its locks).
type PostgresSettings struct {
	// IdleSessionTimeout ends a session idle outside a transaction.
	IdleSessionTimeout Duration `yaml:"idle_session_timeout,omitempty"`
	// IdleInTransactionSessionTimeout ends a session idle in a transaction.
	IdleInTransactionSessionTimeout Duration `yaml:"idle_in_transaction_session_timeout,omitempty"`
	// TCPKeepalivesIdle, TCPKeepalivesInterval and TCPKeepalivesCount are
	// the server's keepalives on client connections.
	TCPKeepalivesIdle     Duration `yaml:"tcp_keepalives_idle,omitempty"`
	TCPKeepalivesInterval Duration `yaml:"tcp_keepalives_interval,omitempty"`
	TCPKeepalivesCount    int      `yaml:"tcp_keepalives_count,omitempty"`
	// Durable turns fsync back on.
	Durable bool `yaml:"durable,omitempty"`
	// Settings are any other server settings, as postgresql.conf spells them.
	Settings map[string]string `yaml:"settings,omitempty"`
}

// PostgresOptions converts the settings for the cluster (zero when unset).
func (s *Scenario) PostgresOptions() cluster.PostgresOptions {
	p := s.Postgres
	if p == nil {
		return cluster.PostgresOptions{}
	}
	return cluster.PostgresOptions{
		Durable: p.Durable, IdleSessionTimeout: p.IdleSessionTimeout.D(),
		IdleInTransactionSessionTimeout: p.IdleInTransactionSessionTimeout.D(),
		TCPKeepalivesIdle:               p.TCPKeepalivesIdle.D(), TCPKeepalivesInterval: p.TCPKeepalivesInterval.D(),
		TCPKeepalivesCount: p.TCPKeepalivesCount, Settings: p.Settings,
	}
}

// SignedDuration is a duration that may be negative ("-2s").
type SignedDuration time.Duration

// D returns the time.Duration.
func (d SignedDuration) D() time.Duration { return time.Duration(d) }

// UnmarshalYAML parses "-1.5s"-style durations, naming the line when it fails.
func (d *SignedDuration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if n.Value == "0" {
		v, err = 0, nil
	}
	if err != nil || n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: bad duration %q (want e.g. 2s, -500ms)", n.Line, n.Value)
	}
	*d = SignedDuration(v)
	return nil
}

// MarshalYAML writes the duration as a string.
func (d SignedDuration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Random is a seeded random nemesis mix.
type Random struct {
	Faults   []string `yaml:"faults"`
	Interval Duration `yaml:"interval"`
	Min      Duration `yaml:"min"`
	Max      Duration `yaml:"max"`
}

// Nemesis is a scenario's fault plan.
type Nemesis struct {
	Script []Step   `yaml:"script,omitempty"`
	Random *Random  `yaml:"random,omitempty"`
	_      struct{} `yaml:"-"`
}

// Expectation is an expected verdict, overall and per checker.
type Expectation struct {
	// Valid is valid, invalid or unknown.
	Valid string `yaml:"valid,omitempty"`
	// Checkers maps a checker name to its expected verdict.
	Checkers map[string]string `yaml:"checkers,omitempty"`
}

// Expect is a scenario's expectation: a default and per-backend overrides.
type Expect struct {
	Expectation `yaml:",inline"`
	// Backends overrides the expectation for named backends. A key
	// "backend/resource" (pg-advisory-xact/postgres) applies only when the
	// run protects that resource, and wins over the plain backend's entry.
	Backends map[string]Expectation `yaml:"backends,omitempty"`
}

// Scenario is one scenario file.
type Scenario struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
	// Backend is the lock implementation under test.
	Backend string `yaml:"backend"`
	// Backends lists the backends the scenario applies to (for matrices);
	// empty means every backend.
	Backends []string `yaml:"backends,omitempty"`
	// Resource is what the lock protects: memory.
	Resource string `yaml:"resource,omitempty"`
	// Fencing is the resource's fencing mode: none, writes or all.
	Fencing string `yaml:"fencing,omitempty"`
	// Clients is the number of client processes.
	Clients int `yaml:"clients,omitempty"`
	// Keys is the number of lock keys (k0, k1, ...).
	Keys int `yaml:"keys,omitempty"`
	// TTL is the lock lease.
	TTL Duration `yaml:"ttl,omitempty"`
	// Hold is the work time inside the critical section.
	Hold Duration `yaml:"hold,omitempty"`
	// Duration is how long clients run.
	Duration Duration `yaml:"duration,omitempty"`
	// Timeout bounds each lock request.
	Timeout Duration `yaml:"timeout,omitempty"`
	// Persistence makes Redis servers keep their keys across a kill
	// (appendonly, appendfsync always).
	Persistence bool `yaml:"persistence,omitempty"`
	// Redis is the setup single-Redis backends run over: single (the
	// default) or sentinel (a primary, a replica and three Sentinels).
	Redis string `yaml:"redis,omitempty"`
	// Postgres sets server-side settings of the run's PostgreSQL.
	Postgres *PostgresSettings `yaml:"postgres,omitempty"`
	// EtcdMembers is the size of the etcd cluster: 1 (the default), 3 or 5.
	EtcdMembers int `yaml:"etcd_members,omitempty"`
	// WaitReplicas makes single-Redis backends WAIT for that many replicas
	// after acquiring, and fail the acquire on a short count.
	WaitReplicas int `yaml:"wait_replicas,omitempty"`
	// FenceStart is where a counter fence starts: redis-fenced's first
	// grant on a key carries FenceStart+1 (kleppmann-fenced starts at 32,
	// so its tokens are Kleppmann's 33 and 34). Fences that are not a
	// counter of ours (etcd's revisions) do not use it.
	FenceStart int64 `yaml:"fence_start,omitempty"`
	// ThinkMin and ThinkMax bound the random pause between rounds.
	ThinkMin Duration `yaml:"think_min,omitempty"`
	ThinkMax Duration `yaml:"think_max,omitempty"`
	// Seed makes the run repeatable.
	Seed int64 `yaml:"seed,omitempty"`
	// Nemesis is the fault plan.
	Nemesis Nemesis `yaml:"nemesis,omitempty"`
	// Checkers to run; empty means all.
	Checkers []string `yaml:"checkers,omitempty"`
	// Expect is the expected verdict.
	Expect Expect `yaml:"expect,omitempty"`
}

// KeyNames returns k0..k(n-1).
func (s *Scenario) KeyNames() []string {
	out := make([]string, s.Keys)
	for i := range out {
		out[i] = "k" + strconv.Itoa(i)
	}
	return out
}

// Expected returns the expectation for backend on the scenario's resource:
// the "backend/resource" entry, else the backend's entry, merged over the
// default. An empty Valid means no expectation.
func (s *Scenario) Expected(backend string) Expectation {
	e := Expectation{Valid: s.Expect.Valid, Checkers: map[string]string{}}
	for k, v := range s.Expect.Checkers {
		e.Checkers[k] = v
	}
	b, ok := s.Expect.Backends[backend+"/"+s.Resource]
	if !ok {
		b, ok = s.Expect.Backends[backend]
	}
	if ok {
		if b.Valid != "" {
			e.Valid = b.Valid
			if len(b.Checkers) > 0 || b.Valid != s.Expect.Valid {
				// A backend's own verdict replaces the default's per-checker detail.
				e.Checkers = map[string]string{}
			}
		}
		for k, v := range b.Checkers {
			e.Checkers[k] = v
		}
	}
	return e
}

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

// Validate checks every value, returning an error wrapping ErrInvalid
// whose text starts with the field's name.
func (s *Scenario) Validate() error {
	bad := func(field, format string, a ...any) error {
		return &fieldError{field: field, msg: fmt.Sprintf(format, a...)}
	}
	switch {
	case s.Name == "":
		return bad("name", "a scenario needs a name")
	case s.Backend == "":
		return bad("backend", "a scenario needs a backend (known: %s)", strings.Join(backends.Names(), ", "))
	}
	if _, _, err := backends.Lookup(s.Backend); err != nil {
		return bad("backend", "%v", err)
	}
	for _, b := range s.Backends {
		if _, _, err := backends.Lookup(b); err != nil {
			return bad("backends", "%v", err)
		}
	}
	if !contains(workload.ResourceNames(), s.Resource) {
		return bad("resource", "unknown resource %q (known: %s)", s.Resource, strings.Join(workload.ResourceNames(), ", "))
	}
	if info, _, _ := backends.Lookup(s.Backend); len(info.Resources) > 0 && !contains(info.Resources, s.Resource) {
		return bad("resource", "backend %s works with the resource %s, not %q", s.Backend, strings.Join(info.Resources, " or "), s.Resource)
	}
	if err := workload.ValidFencing(s.Fencing); err != nil {
		return bad("fencing", "%v", err)
	}
	if s.Clients < 1 || s.Clients > 1000 {
		return bad("clients", "clients must be from 1 to 1000, not %d", s.Clients)
	}
	if s.Keys < 1 || s.Keys > 100000 {
		return bad("keys", "keys must be from 1 to 100000, not %d", s.Keys)
	}
	if s.TTL.D() < time.Millisecond {
		return bad("ttl", "ttl must be at least 1ms, not %s", s.TTL)
	}
	if s.Duration.D() <= 0 {
		return bad("duration", "duration must be positive")
	}
	if s.Timeout.D() <= 0 {
		return bad("timeout", "timeout must be positive")
	}
	if s.ThinkMax < s.ThinkMin {
		return bad("think_max", "think_max (%s) is below think_min (%s)", s.ThinkMax, s.ThinkMin)
	}
	for _, c := range s.Checkers {
		if !checker.IsKnown(c) {
			return bad("checkers", "unknown checker %q (known: %s)", c, strings.Join(checker.All, ", "))
		}
	}
	for i, st := range s.Nemesis.Script {
		at := func(key string) []string { return []string{"script", strconv.Itoa(i), key} }
		if _, err := nemesis.Lookup(st.Fault); err != nil {
			return &fieldError{field: "nemesis", path: at("fault"), msg: fmt.Sprintf("script step %d: %v", i+1, err)}
		}
		if f, _ := nemesis.Lookup(st.Fault); st.For.D() <= 0 {
			if z, ok := f.(nemesis.ZeroDuration); !ok || !z.AllowsZeroDuration() {
				return &fieldError{field: "nemesis", path: at(""), msg: fmt.Sprintf("script step %d: %s needs `for:` (how long it lasts)", i+1, st.Fault)}
			}
		}
		if st.On != "" && !contains([]string{"acquire", "read", "write", "release"}, st.On) {
			return &fieldError{field: "nemesis", path: at("on"), msg: fmt.Sprintf("script step %d: on: %q is not an event (acquire, read, write, release)", i+1, st.On)}
		}
		if st.Process != nil && (*st.Process < 0 || *st.Process >= s.Clients) {
			return &fieldError{field: "nemesis", path: at("process"), msg: fmt.Sprintf("script step %d: no client process %d (clients are 0 to %d)", i+1, *st.Process, s.Clients-1)}
		}
	}
	if err := s.NemesisSchedule().Validate(s.Clients); err != nil {
		return bad("nemesis", "%v", err)
	}
	if err := s.nemesisApplies(); err != nil {
		return bad("nemesis", "%v", err)
	}
	switch s.Redis {
	case "", backends.RedisSingle:
		if s.usesFault("failover") {
			return bad("nemesis", "failover needs `redis: sentinel` (a primary, a replica and Sentinels)")
		}
	case backends.RedisSentinel:
		if info, _, _ := backends.Lookup(s.Backend); !info.Sentinel {
			return bad("redis", "backend %s cannot run over Sentinel (single-Redis backends can: redis-naive, redis-token, redis-fenced, ...)", s.Backend)
		}
	default:
		return bad("redis", "unknown redis setup %q (single, sentinel)", s.Redis)
	}
	if s.EtcdMembers < 0 || s.EtcdMembers > 7 {
		return bad("etcd_members", "etcd_members must be from 1 to 7, not %d", s.EtcdMembers)
	}
	if s.FenceStart < 0 {
		return bad("fence_start", "fence_start must be 0 or more, not %d", s.FenceStart)
	}
	if s.WaitReplicas < 0 || (s.WaitReplicas > 0 && s.Redis != backends.RedisSentinel) {
		return bad("wait_replicas", "wait_replicas needs `redis: sentinel` (there is no replica otherwise)")
	}
	if err := validVerdicts(s.Expect.Expectation, nil); err != nil {
		return err
	}
	for b, e := range s.Expect.Backends {
		name, res, scoped := strings.Cut(b, "/")
		if _, _, err := backends.Lookup(name); err != nil {
			return &fieldError{field: "expect", path: []string{"backends", b}, msg: fmt.Sprintf("expect.backends: %v", err)}
		}
		if scoped && !slices.Contains(workload.ResourceNames(), res) {
			return &fieldError{field: "expect", path: []string{"backends", b}, msg: fmt.Sprintf("expect.backends: unknown resource %q in %q (known: %s)", res, b, strings.Join(workload.ResourceNames(), ", "))}
		}
		if err := validVerdicts(e, []string{"backends", b}); err != nil {
			return err
		}
	}
	return nil
}

// validVerdicts checks an expectation found at path below `expect`.
func validVerdicts(e Expectation, path []string) error {
	at := func(p ...string) []string { return append(append([]string(nil), path...), p...) }
	if e.Valid != "" {
		if _, err := checker.ParseValidity(e.Valid); err != nil {
			return &fieldError{field: "expect", path: at("valid"), msg: err.Error()}
		}
	}
	for c, v := range e.Checkers {
		if !checker.IsKnown(c) {
			return &fieldError{field: "expect", path: at("checkers", c), msg: fmt.Sprintf("unknown checker %q", c)}
		}
		if _, err := checker.ParseValidity(v); err != nil {
			return &fieldError{field: "expect", path: at("checkers", c), msg: fmt.Sprintf("%s: %v", c, err)}
		}
	}
	return nil
}

// NemesisSchedule converts the scenario's plan to the nemesis package's form.
func (s *Scenario) NemesisSchedule() nemesis.Schedule {
	var sch nemesis.Schedule
	for _, st := range s.Nemesis.Script {
		p := -1
		if st.Process != nil {
			p = *st.Process
		}
		t := nemesis.Target{Process: p, Clients: st.Clients, Servers: st.Servers, Topology: st.Topology, Direction: st.Direction,
			Latency: st.Latency.D(), Jitter: st.Jitter.D(), Jump: st.Jump.D(), Rate: st.Rate}
		sch.Script = append(sch.Script, nemesis.Step{Fault: st.Fault, Target: t, At: st.At.D(), On: st.On, Duration: st.For.D()})
	}
	if r := s.Nemesis.Random; r != nil {
		sch.Random = &nemesis.Random{Faults: s.randomFaults(), Interval: r.Interval.D(), Min: r.Min.D(), Max: r.Max.D()}
	}
	return sch
}

// AllFaults, as the only fault of a random mix, stands for every fault
// that applies to the scenario's backend and setup.
const AllFaults = "all"

// randomFaults expands a random mix of [all] into every fault that
// applies to the backend (failover only over Sentinel).
func (s *Scenario) randomFaults() []string {
	r := s.Nemesis.Random
	if r == nil {
		return nil
	}
	if len(r.Faults) != 1 || r.Faults[0] != AllFaults {
		return r.Faults
	}
	info, _, err := backends.Lookup(s.Backend)
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range nemesis.List() {
		f, _ := nemesis.Lookup(n.Name)
		if a, ok := f.(nemesis.Applier); ok && a.Applies(s.Backend, info.ServerKinds(), info.Lease) != nil {
			continue
		}
		if n.Name == "failover" && s.Redis != backends.RedisSentinel {
			continue
		}
		out = append(out, n.Name)
	}
	return out
}

// usesFault reports whether the scenario's plan uses the named fault.
func (s *Scenario) usesFault(name string) bool {
	for _, st := range s.Nemesis.Script {
		if st.Fault == name {
			return true
		}
	}
	return s.Nemesis.Random != nil && contains(s.randomFaults(), name)
}

// nemesisApplies refuses a fault that cannot act on the backend (a clock
// jump on PostgreSQL) rather than skipping it silently.
func (s *Scenario) nemesisApplies() error {
	info, _, err := backends.Lookup(s.Backend)
	if err != nil {
		return err
	}
	var names []string
	for _, st := range s.Nemesis.Script {
		names = append(names, st.Fault)
	}
	if s.Nemesis.Random != nil {
		names = append(names, s.randomFaults()...)
	}
	for _, n := range names {
		f, err := nemesis.Lookup(n)
		if err != nil {
			return err
		}
		if a, ok := f.(nemesis.Applier); ok {
			if err := a.Applies(s.Backend, info.ServerKinds(), info.Lease); err != nil {
				return err
			}
		}
	}
	return nil
}

type fieldError struct {
	field string
	// path leads below field to the node at fault (mapping keys, or
	// sequence indexes as numbers), for the error's line number.
	path []string
	msg  string
}

func (e *fieldError) Error() string { return e.msg }
func (e *fieldError) Unwrap() error { return ErrInvalid }

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

var yamlLine = regexp.MustCompile(`line (\d+): `)

// Parse reads a scenario from data; source names it in errors ("x.yaml").
// Errors read "source:line: problem" and wrap ErrInvalid.
func Parse(data []byte, source string) (*Scenario, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, located(source, err)
	}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("%s:1: %w: the file is empty", source, ErrInvalid)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Scenario
	if err := dec.Decode(&s); err != nil {
		return nil, located(source, err)
	}
	s.applyDefaults()
	if err := s.Validate(); err != nil {
		var fe *fieldError
		line := 1
		if errors.As(err, &fe) {
			line = lineOf(&root, append([]string{fe.field}, fe.path...))
		}
		return nil, fmt.Errorf("%s:%d: %w: %s", source, line, ErrInvalid, err.Error())
	}
	return &s, nil
}

// located turns a yaml error into "source:line: problem".
func located(source string, err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: unmarshal errors:\n")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.TrimSpace(strings.SplitN(msg, "\n", 2)[0])
	line := "1"
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line = m[1]
		msg = strings.Replace(msg, m[0], "", 1)
	}
	if m := yamlUnknown.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("unknown field %q%s", m[1], sectionNames[m[2]])
	} else if m := yamlType.FindStringSubmatch(msg); m != nil {
		got := fmt.Sprintf("%q", m[2])
		if m[2] == "" {
			got = map[string]string{"seq": "a list", "map": "a mapping"}[m[1]]
			if got == "" {
				got = "this value"
			}
		}
		msg = fmt.Sprintf("%s is not %s", got, typeNames(m[3]))
	}
	return fmt.Errorf("%s:%s: %w: %s", source, line, ErrInvalid, msg)
}

var (
	yamlUnknown = regexp.MustCompile(`field (\S+) not found in type scenarios\.(\w+)`)
	yamlType    = regexp.MustCompile("cannot unmarshal !!(\\w+) (?:`(.*)` )?into (\\S+)")
	// sectionNames says where an unknown field was found, by Go type.
	sectionNames = map[string]string{
		"Scenario":         "",
		"Step":             " in a nemesis script step",
		"Random":           " in nemesis.random",
		"Nemesis":          " in nemesis (want script, random)",
		"PostgresSettings": " in postgres",
		"Expectation":      " in an expectation (want valid, checkers)",
		"Expect":           " in expect (want valid, checkers, backends)",
	}
)

// typeNames says in plain words what a Go type wants.
func typeNames(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "a list (write [a, b])"
	case strings.HasPrefix(goType, "map["), strings.HasPrefix(goType, "scenarios."):
		return "a mapping of settings"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "a whole number"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "bool":
		return "true or false"
	case goType == "string":
		return "a single value"
	}
	return "a " + goType
}

// lineOf finds the line of the deepest node on path (mapping keys, or
// sequence indexes as numbers) that exists, or 1.
func lineOf(root *yaml.Node, path []string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 1
	for _, p := range path {
		switch n.Kind {
		case yaml.MappingNode:
			found := false
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					line, n, found = n.Content[i].Line, n.Content[i+1], true
					break
				}
			}
			if !found {
				return line
			}
		case yaml.SequenceNode:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(n.Content) {
				return line
			}
			n = n.Content[i]
			line = n.Line
		default:
			return line
		}
	}
	return line
}

// LoadFile reads and validates a scenario file.
func LoadFile(p string) (*Scenario, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return Parse(data, p)
}

// Builtin returns the built-in scenario with this name.
func Builtin(name string) (*Scenario, error) {
	data, err := builtinFS.ReadFile(path.Join("builtin", name+".yaml"))
	if err != nil {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrNotFound, name, strings.Join(BuiltinNames(), ", "))
	}
	return Parse(data, "builtin/"+name+".yaml")
}

// BuiltinNames lists the built-in scenarios.
func BuiltinNames() []string {
	ents, _ := fs.ReadDir(builtinFS, "builtin")
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

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

// Marshal writes the effective scenario as YAML (scenario.yaml in the store).
func (s *Scenario) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("scenarios: encode: %w", err)
	}
	return buf.Bytes(), enc.Close()
}
