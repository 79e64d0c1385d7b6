package nemesis

import (
	"fmt"
	"time"
)

// CheckSteps checks, before the run, what can only be checked once the
// servers are up: every server a step names exists, and every step can
// happen within the run (its time is before the run's end). A step that
// could never happen is refused, never skipped.
func CheckSteps(env *Env, steps []Step, length time.Duration) error {
	for i, s := range steps {
		if _, err := resolveServers(env, serverNames(s.Params)); err != nil {
			return fmt.Errorf("nemesis step %d (%s): %w", i+1, s.Fault, err)
		}
		if s.At >= length {
			return fmt.Errorf("nemesis step %d (%s): %w: at %s is not before the run ends (duration %s)", i+1, s.Fault, ErrTarget, s.At, length)
		}
	}
	return nil
}

// Missed returns the steps among the first n that never happened: their
// time or event never came, or the fault could not start. Call it after
// Heal.
func (e *Engine) Missed(n int) []Step {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Step
	for i := range min(n, len(e.steps)) {
		if !e.happened[i] {
			out = append(out, e.steps[i])
		}
	}
	return out
}

// serverNames returns the servers a step's params name, if any.
func serverNames(p Params) []string {
	if n, ok := p.(interface{ ServerNames() []string }); ok {
		return n.ServerNames()
	}
	return nil
}

// Windows are when the faults of the steps among the first n that
// happened acted, in step order. Call it after Heal.
func (e *Engine) Windows(n int) []Window {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Window
	for i := range min(n, len(e.steps)) {
		if w := e.windows[i]; w != nil {
			out = append(out, *w)
		}
	}
	return out
}

// Idle describes the steps among the first n whose fault struck but did
// nothing ("kill-session process 0 on read for 0s: it found no session to
// end"): a run whose scripted fault did nothing did not test it. Call it
// after Heal.
func (e *Engine) Idle(n int) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for i := range min(n, len(e.steps)) {
		if why, ok := e.idle[i]; ok {
			out = append(out, e.steps[i].String()+": "+why)
		}
	}
	return out
}

// sessionsIdle is why a session kill that recorded val ended no session,
// or "" when it ended one: val's "sessions" lists what it found, each
// entry with its flag (killed, terminated, closed, revoked) false when
// the session was gone already.
func sessionsIdle(val map[string]any) string {
	list, _ := val["sessions"].([]map[string]any)
	for _, s := range list {
		ended := true
		for _, k := range []string{"killed", "terminated", "closed", "revoked"} {
			if b, ok := s[k].(bool); ok && !b {
				ended = false
			}
		}
		if ended {
			return ""
		}
	}
	whose := ""
	if cs, ok := val["clients"].([]int); ok && len(cs) > 0 {
		whose = fmt.Sprintf(" of client(s) %v", cs)
	}
	why := "it found no session" + whose + " to end"
	if len(list) > 0 {
		why = fmt.Sprintf("the %d session(s)%s it found were gone already", len(list), whose)
	}
	return why + " (how the harness finds a client's session, by kind: docs/client-protocol.md, kill-session)"
}
