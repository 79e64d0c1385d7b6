// Package checker judges a history. Every checker is a pure function of the
// ops: no servers, no network, so a stored history can be re-checked anywhere.
// It imports only package history.
package checker

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/locktorture/locktorture/history"
)

// Validity is a three-valued verdict: valid, invalid or unknown.
type Validity int8

// The three verdicts. Merging orders them invalid > unknown > valid.
const (
	Valid Validity = iota
	Unknown
	Invalid
)

// String returns "valid", "invalid" or "unknown".
func (v Validity) String() string {
	switch v {
	case Valid:
		return "valid"
	case Invalid:
		return "invalid"
	default:
		return "unknown"
	}
}

// MarshalJSON encodes as in results.json: true, false or "unknown".
func (v Validity) MarshalJSON() ([]byte, error) {
	switch v {
	case Valid:
		return []byte("true"), nil
	case Invalid:
		return []byte("false"), nil
	default:
		return []byte(`"unknown"`), nil
	}
}

// UnmarshalJSON accepts true, false, "unknown" (and "valid"/"invalid").
func (v *Validity) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "true", `"valid"`:
		*v = Valid
	case "false", `"invalid"`:
		*v = Invalid
	case `"unknown"`, "null":
		*v = Unknown
	default:
		return fmt.Errorf("checker: bad validity %s", b)
	}
	return nil
}

// ParseValidity parses "valid", "invalid" or "unknown".
func ParseValidity(s string) (Validity, error) {
	switch s {
	case "valid", "true":
		return Valid, nil
	case "invalid", "false":
		return Invalid, nil
	case "unknown":
		return Unknown, nil
	}
	return Unknown, fmt.Errorf("bad verdict %q (want valid, invalid or unknown)", s)
}

// merge combines verdicts: invalid if any is invalid, else unknown if any is
// unknown, else valid.
func merge(vs ...Validity) Validity {
	out := Valid
	for _, v := range vs {
		if v > out {
			out = v
		}
	}
	return out
}

// Names of the checkers, in the order they run and are reported.
const (
	NameMutex        = "mutex"
	NameLinearizable = "linearizable"
	NameFencing      = "fencing"
	NameLostUpdate   = "lost-update"
	NameStats        = "stats"
)

// All lists every checker name, in report order.
var All = []string{NameMutex, NameLinearizable, NameFencing, NameLostUpdate, NameStats}

// Options tune the checkers.
type Options struct {
	// LinearizableTimeout bounds porcupine; when it runs out the
	// linearizable result is unknown. Zero means 30s.
	LinearizableTimeout time.Duration
}

// Checkers holds one result per checker that ran; a nil field did not run.
// It is the "checkers" object of results.json.
type Checkers struct {
	Mutex        *MutexResult        `json:"mutex,omitempty"`
	Linearizable *LinearizableResult `json:"linearizable,omitempty"`
	Fencing      *FencingResult      `json:"fencing,omitempty"`
	LostUpdate   *LostUpdateResult   `json:"lost-update,omitempty"`
	Stats        *StatsResult        `json:"stats,omitempty"`
}

// Verdicts returns each checker's verdict by name, for those that ran.
func (c *Checkers) Verdicts() map[string]Validity {
	m := map[string]Validity{}
	if c.Mutex != nil {
		m[NameMutex] = c.Mutex.Valid
	}
	if c.Linearizable != nil {
		m[NameLinearizable] = c.Linearizable.Valid
	}
	if c.Fencing != nil {
		m[NameFencing] = c.Fencing.Valid
	}
	if c.LostUpdate != nil {
		m[NameLostUpdate] = c.LostUpdate.Valid
	}
	if c.Stats != nil {
		m[NameStats] = c.Stats.Valid
	}
	return m
}

// Verdict merges the verdicts of every checker that ran. With no checker
// at all, it is unknown: a run that checked nothing is never valid.
func (c *Checkers) Verdict() Validity {
	vs := c.Verdicts()
	if len(vs) == 0 {
		return Unknown
	}
	out := Valid
	for _, v := range vs {
		out = merge(out, v)
	}
	return out
}

// Results is results.json.
type Results struct {
	Valid    Validity `json:"valid"`
	Checkers Checkers `json:"checkers"`
	Scenario string   `json:"scenario"`
	Backend  string   `json:"backend"`
	// Program, for backend exec, names the program that ran (my_lock.py).
	Program  string `json:"program,omitempty"`
	Resource string `json:"resource"`
	Seed     int64  `json:"seed"`
	Ops      int    `json:"ops"`
	// Truncated is set when the history's last line was cut off and dropped.
	Truncated bool `json:"truncated,omitempty"`
	// Note explains an unknown or surprising verdict (for example, nothing was checked).
	Note string `json:"note,omitempty"`
	// Warnings lists the rules of the history contract the history broke
	// and the checkers worked around (history.Lint), up to MaxWarnings;
	// WarningCount counts them all.
	Warnings     []string `json:"warnings,omitempty"`
	WarningCount int      `json:"warning_count,omitempty"`
	// Servers says where the servers came from (mode, images, versions).
	Servers *ServerSource `json:"servers,omitempty"`
	// Library names the third-party library the backend drives, when it
	// is one (its name, version and language).
	Library *Library `json:"library,omitempty"`
	// Capped names the lists of violations cut short at maxListed (their
	// counts have every one), and the warnings cut at MaxWarnings.
	Capped []Capped `json:"capped,omitempty"`
}

// Capped is one list of results.json that holds only the first of its
// entries.
type Capped struct {
	// List names it, as checker.field ("mutex.violations").
	List string `json:"list"`
	// Listed is how many it holds; Count how many there were.
	Listed int `json:"listed"`
	Count  int `json:"count"`
}

// NoteCapped fills Capped from the checkers' counts and lists.
func (r *Results) NoteCapped() {
	r.Capped = nil
	note := func(list string, listed, count int) {
		if count > listed {
			r.Capped = append(r.Capped, Capped{List: list, Listed: listed, Count: count})
		}
	}
	c := &r.Checkers
	if c.Mutex != nil {
		note("mutex.violations", len(c.Mutex.Violations), c.Mutex.Count)
	}
	if c.Fencing != nil {
		note("fencing.violations", len(c.Fencing.Violations), c.Fencing.Count)
		note("fencing.rejections", len(c.Fencing.Rejections), c.Fencing.RejectedStale)
	}
	if c.LostUpdate != nil {
		note("lost-update.violations", len(c.LostUpdate.Violations), c.LostUpdate.Count)
	}
	note("warnings", len(r.Warnings), r.WarningCount)
}

// MaxWarnings caps the warnings listed in Results.
const MaxWarnings = 100

// AddWarnings lists the contract rules a history broke in r (the first
// MaxWarnings) and counts them all.
func (r *Results) AddWarnings(ps []history.Problem) {
	r.WarningCount += len(ps)
	for _, p := range ps {
		if len(r.Warnings) >= MaxWarnings {
			break
		}
		r.Warnings = append(r.Warnings, p.String())
	}
}

// Check runs the named checkers (every one when names is empty) over ops and
// merges their verdicts. The checkers are pure functions of ops, so they run
// side by side, each on its own goroutine; mutex and stats share one
// computation of the holds. A checker that panics yields
// unknown, as Jepsen's check-safe does. An unknown name is an error.
func Check(ctx context.Context, ops []history.Op, names []string, opt Options) (Checkers, error) {
	if len(names) == 0 {
		names = All
	}
	var c Checkers
	var runs []func()
	holds := sync.OnceValue(func() []Hold { return Holds(ops) }) // mutex's and stats', made once
	for _, n := range names {
		switch n {
		case NameMutex:
			runs = append(runs, func() {
				c.Mutex = safe(func() *MutexResult { return runMutex(ops, holds) }, func(e string) *MutexResult { return &MutexResult{Valid: Unknown, Error: e} })
			})
		case NameLinearizable:
			runs = append(runs, func() {
				c.Linearizable = safe(func() *LinearizableResult { return runLinearizable(ctx, ops, opt.LinearizableTimeout) }, func(e string) *LinearizableResult { return &LinearizableResult{Valid: Unknown, Error: e} })
			})
		case NameFencing:
			runs = append(runs, func() {
				c.Fencing = safe(func() *FencingResult { return runFencing(ops) }, func(e string) *FencingResult { return &FencingResult{Valid: Unknown, Error: e} })
			})
		case NameLostUpdate:
			runs = append(runs, func() {
				c.LostUpdate = safe(func() *LostUpdateResult { return runLostUpdate(ops) }, func(e string) *LostUpdateResult { return &LostUpdateResult{Valid: Unknown, Error: e} })
			})
		case NameStats:
			runs = append(runs, func() {
				c.Stats = safe(func() *StatsResult { return runStats(ops, holds) }, func(e string) *StatsResult { return &StatsResult{Valid: Unknown, Error: e} })
			})
		default:
			return Checkers{}, fmt.Errorf("unknown checker %q (known: %v)", n, All)
		}
	}
	var wg sync.WaitGroup
	for _, run := range runs {
		wg.Go(run)
	}
	wg.Wait()
	return c, nil
}

// IsKnown reports whether name is a checker.
func IsKnown(name string) bool {
	for _, n := range All {
		if n == name {
			return true
		}
	}
	return false
}

// The checkers Check runs; variables so that a test can make one crash.
var (
	runMutex        = mutex
	runLinearizable = checkLinearizable
	runFencing      = checkFencing
	runLostUpdate   = checkLostUpdate
	runStats        = stats
)

func safe[T any](f func() T, onPanic func(string) T) (out T) {
	defer func() {
		if r := recover(); r != nil {
			out = onPanic(fmt.Sprintf("checker crashed: %v", r))
		}
	}()
	return f()
}

// sortedKeys returns a map's keys in order, for deterministic output.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
