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
