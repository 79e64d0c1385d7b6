package scenarios

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/workload"
)

// Validate checks every value, returning an error wrapping ErrInvalid
// that names the field. Parse runs it on every file; runner.Run and
// Apply run it again, so a scenario made or changed in Go meets the same
// rules.
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
	if err := plainName(s.Name); err != nil {
		return bad("name", "name: %v", err)
	}
	if r := strings.ToLower(s.Name); slices.Contains(reservedNames, r) {
		return bad("name", "name: %q is taken by the store (store/%s), choose another", s.Name, r)
	}
	if err := plainName(s.Backend); err != nil {
		return bad("backend", "backend: %v", err)
	}
	if _, _, err := backends.Lookup(s.Backend); err != nil {
		return bad("backend", "%v", err)
	}
	for _, b := range s.Backends {
		if err := plainName(b); err != nil {
			return bad("backends", "backends: %v", err)
		}
		if _, _, err := backends.Lookup(b); err != nil {
			return bad("backends", "%v", err)
		}
	}
	if err := s.validateSuits(); err != nil {
		return err
	}
	if err := s.validateNotRun(); err != nil {
		return err
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
	if s.Clients < 1 || s.Clients > maxClients {
		return bad("clients", "clients must be from 1 to %d, not %d", maxClients, s.Clients)
	}
	if s.Keys < 1 || s.Keys > maxKeys {
		return bad("keys", "keys must be from 1 to %d, not %d", maxKeys, s.Keys)
	}
	if s.TTL.D() < time.Millisecond {
		return bad("ttl", "ttl must be at least 1ms, not %s", s.TTL)
	}
	if s.Hold < 0 {
		return bad("hold", "hold must be 0 or more, not %s", s.Hold)
	}
	if s.Duration.D() <= 0 {
		return bad("duration", "duration must be positive, not %s", s.Duration)
	}
	if s.Timeout.D() <= 0 {
		return bad("timeout", "timeout must be positive, not %s", s.Timeout)
	}
	if s.ThinkMin < 0 {
		return bad("think_min", "think_min must be 0 or more, not %s", s.ThinkMin)
	}
	if s.ThinkMax < s.ThinkMin {
		return bad("think_max", "think_max (%s) is below think_min (%s)", s.ThinkMax, s.ThinkMin)
	}
	if s.ReleaseRetry < 0 {
		return bad("release_retry", "release_retry must be 0 or more, not %s", s.ReleaseRetry)
	}
	if s.EntryWait < 0 {
		return bad("entry_wait", "entry_wait must be 0 or more, not %s", s.EntryWait)
	}
	if s.ReleaseRetry > 0 && s.ClientMode != ClientInproc {
		return bad("release_retry", "release_retry needs client_mode inproc: a client process serves one request at a time, so it cannot retry a release in the background while it acquires")
	}
	if n := len(s.Nemesis.Script); n > maxSteps {
		return &fieldError{field: "nemesis", path: []string{"script"}, msg: fmt.Sprintf("nemesis.script has %d steps, more than the limit of %d", n, maxSteps)}
	}
	if r := s.Nemesis.Random; r != nil && (r.Interval < 0 || r.Min < 0 || r.Max < 0) {
		return &fieldError{field: "nemesis", path: []string{"random"}, msg: fmt.Sprintf("nemesis.random: interval (%s), min (%s) and max (%s) must be 0 or more", r.Interval, r.Min, r.Max)}
	}
	for _, c := range s.Checkers {
		if !checker.IsKnown(c) {
			return bad("checkers", "unknown checker %q (known: %s)", c, strings.Join(checker.All, ", "))
		}
	}
	if err := s.validateNemesis(); err != nil {
		return err
	}
	switch s.Redis {
	case "", backends.RedisSingle:
	case backends.RedisSentinel:
		if info, _, _ := backends.Lookup(s.Backend); !info.Sentinel {
			return bad("redis", "backend %s cannot run over Sentinel (single-Redis backends can: redis-naive, redis-token, redis-fenced, ...)", s.Backend)
		}
	default:
		return bad("redis", "unknown redis setup %q (single, sentinel)", s.Redis)
	}
	if err := s.validateKinds(); err != nil {
		return err
	}
	if err := s.validateOptions(); err != nil {
		return err
	}
	if err := s.validateServers(); err != nil {
		return err
	}
	if err := s.validateClients(); err != nil {
		return err
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
	for b, e := range s.Expect.Fenced {
		if _, _, err := backends.Lookup(b); err != nil {
			return &fieldError{field: "expect", path: []string{"fenced", b}, msg: fmt.Sprintf("expect.fenced: %v", err)}
		}
		if err := validVerdicts(e, []string{"fenced", b}); err != nil {
			return err
		}
	}
	return nil
}

// validateNotRun checks not_run (registered backends, each with a reason)
// and refuses a run of a backend it names, giving the reason.
func (s *Scenario) validateNotRun() error {
	for b, why := range s.NotRun {
		if _, _, err := backends.Lookup(b); err != nil {
			return &fieldError{field: "not_run", path: []string{b}, msg: fmt.Sprintf("not_run: %v", err)}
		}
		if strings.TrimSpace(why) == "" {
			return &fieldError{field: "not_run", path: []string{b}, msg: fmt.Sprintf("not_run: %s needs the reason it is not run", b)}
		}
		if (len(s.Backends) > 0 || s.Suits != nil) && s.Applies(b) {
			return &fieldError{field: "not_run", path: []string{b}, msg: fmt.Sprintf("not_run: %s is also in backends", b)}
		}
	}
	if why, ok := s.NotRun[s.Backend]; ok {
		return &fieldError{field: "backend", msg: fmt.Sprintf("%s is not run with %s: %s", s.Name, s.Backend, strings.TrimSpace(why))}
	}
	return nil
}

// reservedNames are store entries no scenario may be named (compared
// without case: some disks do not tell Latest from latest).
var reservedNames = []string{"latest", "matrix"}

// maxName bounds a name's length.
const maxName = 100

// plainName refuses a name that cannot be one directory of the store:
// only ASCII letters, digits, '-', '_' and '.' (not first), at most 100
// characters. The error quotes the name, control characters escaped.
func plainName(n string) error {
	if len(n) > maxName {
		return fmt.Errorf("%.20q... is %d characters long, more than %d", n, len(n), maxName)
	}
	for i, r := range n {
		plain := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' && i > 0
		if !plain {
			return fmt.Errorf("%q is not a plain name (letters, digits, '-', '_' and '.', not first; it names a directory of the store)", n)
		}
	}
	return nil
}

// validVerdicts checks an expectation found at path below `expect`.
func validVerdicts(e Expectation, path []string) error {
	at := func(p ...string) []string { return append(append([]string(nil), path...), p...) }
	switch {
	case e.Valid == Either && strings.TrimSpace(e.Why) == "":
		return &fieldError{field: "expect", path: at("valid"), msg: "valid: either needs a why: what the lock's claim leaves open"}
	case e.Valid != Either && e.Why != "":
		return &fieldError{field: "expect", path: at("why"), msg: "why is the reason for valid: either, and the verdict here is " + strconv.Quote(e.Valid)}
	case e.Valid != "" && e.Valid != Either:
		if _, err := checker.ParseValidity(e.Valid); err != nil {
			return &fieldError{field: "expect", path: at("valid"), msg: err.Error() + " (or either)"}
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
