// Package scenarios is the scenario file format (YAML) and everything done
// to a scenario before a run:
//
//   - scenario.go: the types (Scenario and the nemesis plan, expectations),
//     the expectation lookup and Marshal, which writes the effective
//     settings (scenario.yaml in the store);
//   - duration.go: durations as YAML writes them ("250ms", "-2s");
//   - load.go: Parse, LoadFile and the embedded built-ins. Loading is strict:
//     an unknown field or a bad value is one error, "file:line: invalid
//     scenario: problem", wrapping ErrInvalid;
//   - limits.go: the size limits, checked before a file is decoded (1 MiB,
//     1000 entries in a mapping, 10000 items in a list);
//   - defaults.go: the values of fields a file leaves out, and the zeros a
//     file may not give;
//   - validate.go: Validate, the checks every scenario passes before a run;
//   - nemesis.go: script steps (each fault decodes its own keys), the
//     fault plan in the nemesis package's form and its validation;
//   - options.go: backend_options, each backend's block decoded by the
//     backend itself;
//   - kinds.go: the kinds' blocks (etcd: {members: 3}), each decoded by
//     its kind, and their older top-level spellings (etcd_members);
//   - process.go: clients as processes and the exec backend's program,
//     and the kinds of servers a scenario needs;
//   - servers.go: where the servers run (local, docker, external);
//   - overrides.go: command-line settings applied over a scenario;
//   - judged.go: Unjudged, whether a scenario's expectation still speaks
//     for a run that overrides changed;
//   - suits.go: suits:, the backends a scenario applies to, chosen by what
//     they are;
//   - families.go: the fault families a comparison runs (and which
//     built-ins fill each) and the scenarios a matrix runs by default.
//
// Every key a file takes is documented for users in docs/scenario-file.md.
package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/locktorture/locktorture/backends"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/cluster"
)

// Sentinel errors of this package.
var (
	// ErrInvalid is wrapped by every error about a scenario's content.
	ErrInvalid = errors.New("invalid scenario")
	// ErrNotFound is wrapped when no built-in scenario has the name.
	ErrNotFound = errors.New("unknown scenario")
)

// StartOptions are the scenario's settings for the servers a run starts:
// Redis persistence, redis: sentinel, the run's clients, and each kind's
// own block (etcd: {members: 3}, postgres: {...}).
func (s *Scenario) StartOptions() cluster.StartOptions {
	return cluster.StartOptions{Persistence: s.Persistence, Sentinel: s.Redis == backends.RedisSentinel, Clients: s.Clients,
		Kinds: maps.Clone(s.Kinds)}
}

// BackendEnv is what the scenario tells its backend: the one place a
// backends.Env is made from a run's settings — the runner's, the check of
// backend_options blocks (cl nil: nothing started), and, carried over the
// wire (clientprotocol.ChildConfigOf), a client process's.
func (s *Scenario) BackendEnv(cl *cluster.Cluster) backends.Env {
	return backends.Env{
		Cluster:     cl,
		TTL:         s.TTL.D(),
		OpTimeout:   s.Timeout.D(),
		Clients:     s.Clients,
		Keys:        s.KeyNames(),
		Seed:        s.Seed,
		Servers:     s.StartOptions(),
		Options:     s.Options(s.Backend),
		ExecServers: s.ExecServers(),
	}
}

// Random is a seeded random nemesis mix.
type Random struct {
	// Faults are the faults to draw from, or [all]: every fault that
	// applies to the backend.
	Faults []string `yaml:"faults"`
	// Interval is the mean gap between one fault's end and the next start.
	Interval Duration `yaml:"interval"`
	// Min and Max bound each fault's length.
	Min Duration `yaml:"min"`
	// Max: see Min.
	Max Duration `yaml:"max"`
}

// Nemesis is a scenario's fault plan.
type Nemesis struct {
	// Script are deterministic steps (at most 10000).
	Script Script `yaml:"script,omitempty"`
	// Random is a seeded random mix, run alongside the script.
	Random *Random  `yaml:"random,omitempty"`
	_      struct{} `yaml:"-"`
}

// Either is the expected verdict of a run that may come out valid or
// invalid because the lock's own documented claim leaves the outcome open
// (a race between the lock's signal and the server that its docs do not
// decide): a valid run meets it, and so does an invalid one whose
// checkers are as the expectation's Checkers say; an unknown run does not.
// An Either expectation says why in Why.
const Either = "either"

// Expectation is an expected verdict, overall and per checker.
type Expectation struct {
	// Valid is valid, invalid, unknown or Either.
	Valid string `yaml:"valid,omitempty"`
	// Checkers maps a checker name to its expected verdict (with Either:
	// when the run is invalid).
	Checkers map[string]string `yaml:"checkers,omitempty"`
	// Why is the reason for an Either expectation, in words: what the
	// claim leaves open. Required with Either, refused without it.
	Why string `yaml:"why,omitempty"`
}

// Expect is a scenario's expectation: a default and per-backend overrides.
type Expect struct {
	Expectation `yaml:",inline"`
	// Backends overrides the expectation for named backends. A key
	// "backend/resource" (pg-advisory-xact/postgres) applies only when the
	// run protects that resource, and wins over the plain backend's entry.
	Backends map[string]Expectation `yaml:"backends,omitempty"`
	// Fenced is the expectation, by backend, when the run checks fencing
	// tokens at the resource (fencing writes or all): a fault family states
	// there what fencing makes of the backends whose grants carry tokens.
	// An entry here replaces the others whole for such a run.
	Fenced map[string]Expectation `yaml:"fenced,omitempty"`
}

// Scenario is one scenario file. Parse gives a field the file leaves out
// its default (in the comments below); a zero the file gives is kept
// where zero means something (hold, think_min, think_max, seed) and
// refused where it does not.
type Scenario struct {
	// Name names the scenario and its directory in the store
	// (store/<name>/...): letters, digits, '-', '_' and '.' (not first),
	// at most 100 characters, not "latest" or "matrix". Required.
	Name string `yaml:"name"`
	// Description says what the scenario shows, for people.
	Description string `yaml:"description,omitempty"`
	// Backend is the lock implementation under test.
	Backend string `yaml:"backend"`
	// Backends lists the backends the scenario applies to (for matrices);
	// left out, every backend (an empty list in a file is refused). With
	// Suits, a backend must be in both.
	Backends []string `yaml:"backends,omitempty"`
	// Suits selects the backends the scenario applies to by what they
	// are rather than by name: the kinds of server they run on, the
	// abilities they have (see Applies).
	Suits *Suits `yaml:"suits,omitempty"`
	// NotRun names the backends the scenario does not apply to, each with
	// the reason (a fault family whose fault a backend's servers cannot
	// suffer). Running one is refused with that reason, and a matrix
	// shows the pair as not run.
	NotRun map[string]string `yaml:"not_run,omitempty"`
	// Resource is what the lock protects: memory (the default, unless the
	// backend works only with another), postgres or etcd.
	Resource string `yaml:"resource,omitempty"`
	// Fencing is the resource's fencing mode: none (the default), writes
	// or all.
	Fencing string `yaml:"fencing,omitempty"`
	// Clients is the number of client processes: 1 to 1000, default 2.
	Clients int `yaml:"clients,omitempty"`
	// Keys is the number of lock keys (k0, k1, ...): 1 to 100000, default 1.
	Keys int `yaml:"keys,omitempty"`
	// TTL is the lock lease: at least 1ms, default 1s.
	TTL Duration `yaml:"ttl,omitempty"`
	// Hold is the work time inside the critical section: default 50ms;
	// 0 is no work at all.
	Hold Duration `yaml:"hold"`
	// Duration is how long clients run: default 5s.
	Duration Duration `yaml:"duration,omitempty"`
	// Timeout bounds each lock request: default 500ms.
	Timeout Duration `yaml:"timeout,omitempty"`
	// Persistence makes Redis servers keep their keys across a kill
	// (appendonly, appendfsync always).
	Persistence bool `yaml:"persistence"`
	// Redis is the setup single-Redis backends run over: single (the
	// default) or sentinel (a primary, a replica and three Sentinels).
	Redis string `yaml:"redis"`
	// RedisProgram is the server the Redis servers and Sentinels run:
	// redis (the default: redis-server, redis-sentinel) or valkey
	// (valkey-server, valkey-sentinel: Debian 13's, or an image that has
	// them), for every Redis backend.
	RedisProgram string `yaml:"redis_program,omitempty"`
	// Kinds are each kind of server's own settings, by kind name: a
	// block in the file keyed by the kind's name (`etcd: {members: 3}`,
	// `zookeeper: {members: 3}`, `postgres: {via: pgbouncer}`,
	// `pgbouncer: {pool_mode: transaction}`), decoded by the kind
	// (cluster.DecodeKindOptions), each of the type its
	// cluster.Configurable.Options returns. Parse gives each kind the run uses its
	// defaults when the file gives no block. Set one with SetKindOptions.
	Kinds map[string]cluster.KindOptions `yaml:"-"`
	// BackendOptions are each backend's own settings, by backend name
	// (`backend_options: {redis-fenced: {fence_start: 32}}`): the keys
	// each backend takes are its own (see BackendOptions).
	BackendOptions BackendOptions `yaml:"backend_options,omitempty"`
	// Servers is where the servers run: local (the default: processes of
	// this machine on 127.0.0.1), docker (a container each) or external
	// (servers someone else runs, named in ServersFile).
	Servers string `yaml:"servers,omitempty"`
	// ServersFile names the servers of an external run (a YAML file: see
	// cluster.ServersFile); a relative path is from the scenario file's
	// directory, or the working directory for --servers-file.
	ServersFile string `yaml:"servers_file,omitempty"`
	// Security is how the run's own servers talk to their clients: ""
	// (plain, each asking for a password of the run's own) or tls (the
	// same over TLS, every server's certificate signed by a CA made for
	// the run; --tls). Servers someone else runs speak TLS when their
	// servers file says so.
	Security string `yaml:"security,omitempty"`
	// KeyPrefix is put before every key name (k0, k1...): an external run
	// sets its namespace there, so everything it touches names the run.
	// Not part of the file.
	KeyPrefix string `yaml:"-"`
	// Uncontrolled names the servers faults cannot act on (an external
	// run's, without control): set by the runner from the servers file.
	Uncontrolled []string `yaml:"-"`
	// Images names, in docker mode, the image each kind of server runs
	// from: a kind's name (redis, postgres, pgbouncer, ...), or all (official images by
	// default; `make images` builds locktorture-servers:bookworm).
	Images map[string]string `yaml:"images,omitempty"`
	// ClientMode is how clients run: inproc (the default: goroutines of
	// the harness) or process (one process each, speaking the client
	// protocol; a pause freezes the whole process).
	ClientMode string `yaml:"client_mode,omitempty"`
	// Exec is the program of the exec backend.
	Exec *Exec `yaml:"exec,omitempty"`
	// ThinkMin and ThinkMax bound the random pause between rounds:
	// 5ms to 25ms when both are left out; 0 to 0 is no pause.
	ThinkMin Duration `yaml:"think_min"`
	// ThinkMax: see ThinkMin. Left out alone, it is the larger of 25ms
	// and ThinkMin; ThinkMin left out alone is 0.
	ThinkMax Duration `yaml:"think_max"`
	// ReleaseRetry, when set, makes each client retry a release whose
	// outcome is unknown (its reply was lost), every ReleaseRetry in the
	// background until the lock reports it done or certainly not done,
	// while the client goes on acquiring with the same lock client — as
	// careful application code does (etcd issue 22082). The retries are
	// not ops of the history (a process has one op at a time). Needs
	// client_mode inproc.
	ReleaseRetry Duration `yaml:"release_retry,omitempty"`
	// EntryWait is how long each client's first request waits for the
	// previous client's first reply, so that client 0 asks first: 100ms
	// when left out (the previous client may be paused or cut off from
	// the start). A scenario whose story needs client 0's grant before
	// client 1 asks, whatever the servers' speed, sets it to the timeout:
	// client 0's first acquire has then ended before client 1's begins.
	EntryWait Duration `yaml:"entry_wait,omitempty"`
	// Seed makes the run repeatable: default 1; 0 is a seed like any other.
	Seed int64 `yaml:"seed"`
	// Nemesis is the fault plan.
	Nemesis Nemesis `yaml:"nemesis,omitempty"`
	// Checkers to run: all when the file leaves them out (an empty list
	// in a file is refused: it would check nothing).
	Checkers []string `yaml:"checkers,omitempty"`
	// Expect is the expected verdict.
	Expect Expect `yaml:"expect,omitempty"`
}

// KeyNames returns k0..k(n-1).
func (s *Scenario) KeyNames() []string {
	out := make([]string, max(s.Keys, 0))
	for i := range out {
		out[i] = s.KeyPrefix + "k" + strconv.Itoa(i)
	}
	return out
}

// Expected returns the expectation for backend on the scenario's resource:
// the "backend/resource" entry, else the backend's entry, merged over the
// default. An empty Valid means no expectation.
func (s *Scenario) Expected(backend string) Expectation {
	if f, ok := s.Expect.Fenced[backend]; ok && s.Fencing != "" && s.Fencing != "none" {
		return Expectation{Valid: f.Valid, Checkers: maps.Clone(f.Checkers), Why: f.Why}
	}
	e := Expectation{Valid: s.Expect.Valid, Checkers: map[string]string{}, Why: s.Expect.Why}
	for k, v := range s.Expect.Checkers {
		e.Checkers[k] = v
	}
	b, ok := s.Expect.Backends[backend+"/"+s.Resource]
	if !ok {
		b, ok = s.Expect.Backends[backend]
	}
	if ok {
		if b.Valid != "" {
			e.Valid, e.Why = b.Valid, b.Why
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

// Marshal writes the effective scenario as YAML (scenario.yaml in the store).
func (s *Scenario) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	// What an unset field means, written out, so the file loads again.
	eff := *s
	if eff.Redis == "" {
		eff.Redis = backends.RedisSingle
	}
	// The run's backend's options with their defaults written out.
	if o := s.Options(s.Backend); o != nil {
		eff.BackendOptions = BackendOptions{}
		for k, v := range s.BackendOptions {
			eff.BackendOptions[k] = v
		}
		eff.BackendOptions[s.Backend] = o
	}
	var doc yaml.Node
	if err := doc.Encode(&eff); err != nil {
		return nil, fmt.Errorf("scenarios: encode: %w", err)
	}
	// The kinds' blocks, beside the other server settings.
	blocks, err := s.kindBlocks()
	if err != nil {
		return nil, err
	}
	after := keysAfterKinds()
	at := len(doc.Content)
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if slices.Contains(after, doc.Content[i].Value) {
			at = i
			break
		}
	}
	doc.Content = slices.Insert(doc.Content, at, blocks...)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("scenarios: encode: %w", err)
	}
	return buf.Bytes(), enc.Close()
}
