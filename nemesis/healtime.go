package nemesis

import "time"

// HealTime is how long healing the faults has taken so far, a heal under
// way counted up to now: a kill's restart waits until its server serves
// again, which a JVM on a loaded machine takes seconds to do. The runner
// adds it to the run's duration, so that the clients get the time after
// each heal that the scenario planned, however slowly the servers start.
func (e *Engine) HealTime() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.healTook
	if !e.healFrom.IsZero() {
		d += time.Since(e.healFrom)
	}
	return d
}
