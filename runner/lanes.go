package runner

import (
	"context"
	"sync"

	"github.com/locktorture/locktorture/cluster"
)

// laneHooks are what a run tells the matrix lane that runs it (both nil
// for a run of its own).
type laneHooks struct {
	// clientsDone is called once the clients' time is up (or they
	// failed), before the faults are healed: the lane starts its next
	// cell's servers then, when they are slow to start (prestart.go).
	clientsDone func()
	// clientsStopped is called once every client stopped and every fault
	// healed: what is left of the run (its final reads, the check, the
	// report, stopping its servers) acts on nothing but its own servers
	// and files, and the lane starts its next cell beside it.
	clientsStopped func()
}

// overlaps says whether the lane starts the cell after the i-th one once
// the i-th one's clients stopped (its check, report and servers' stop go
// on beside the next cell), rather than once it ended: when cells run
// side by side (Parallel above 1; one at a time is one at a time, each
// cell followed from its start to its end) and the cell's servers are its
// own. External servers are someone else's,
// shared by the cells, and a matrix over them runs one cell at a time.
func (m *matrixRun) overlaps(i int) bool {
	return m.opt.Parallel > 1 && m.share[i].Scenario.Servers != cluster.ServersExternal
}

// laneCell runs the i-th cell of the share (ready: its run prepared
// ahead, or nil) in the background and returns once the lane may go on:
// when the cell's clients stopped (overlaps) or when it ended. ended is
// closed once the cell has ended, whatever way.
func (m *matrixRun) laneCell(ctx context.Context, i int, ready *ahead, clientsDone func()) (ended <-chan struct{}) {
	released, done := make(chan struct{}), make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(released) }) }
	h := laneHooks{clientsDone: clientsDone}
	if m.overlaps(i) {
		h.clientsStopped = release
	}
	go func() {
		defer close(done)
		defer release()
		m.runCell(ctx, i, ready, h)
	}()
	<-released
	return done
}
