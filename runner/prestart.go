package runner

import (
	"context"
	"sync"
	"time"

	"github.com/locktorture/locktorture/history"
)

// ahead is a cell whose run a lane prepares (prepare: its store and its
// servers) while the lane's previous cell winds down. It belongs to that one
// cell: run finishes it, or abandon stops what it started.
type ahead struct {
	i      int // the cell, in the share
	cancel context.CancelFunc
	done   chan struct{} // closed once prepare returned
	took   time.Duration // how long prepare took
	r      *run
	err    error
	used   bool // run was called: the run owns its servers
}

// startAhead prepares the i-th cell of the share in the background, with
// the run options it would have had (but Observe, given to run).
func (m *matrixRun) startAhead(ctx context.Context, i int) *ahead {
	actx, cancel := context.WithCancel(ctx)
	a := &ahead{i: i, cancel: cancel, done: make(chan struct{})}
	c := m.share[i]
	began := time.Now()
	go func() {
		defer close(a.done)
		a.r, a.err = prepare(actx, c.Scenario, m.runOptions(c, false))
		a.took = time.Since(began)
	}()
	return a
}

// run waits for the cell's servers and runs the rest of it (see Run and
// runThen), its run.log saying that they were started ahead and how long
// it waited for them.
func (a *ahead) run(ctx context.Context, observe func(history.Op), h laneHooks) (*Outcome, error) {
	a.used = true
	defer a.cancel()
	began := time.Now()
	<-a.done
	waited := time.Since(began)
	if a.err != nil {
		return nil, a.err
	}
	r := a.r
	defer r.cleanup()
	r.opt.Observe = observe
	r.hooks = h
	r.lg.Printf("servers started ahead, as the lane's previous cell wound down: up in %s; waited %s for them",
		a.took.Round(time.Millisecond), waited.Round(time.Millisecond))
	return r.finish(ctx)
}

// abandon stops what the cell's prepare started, once it returned, when
// the cell will not run (the matrix stopped); nil or a cell run is left.
func (a *ahead) abandon() {
	if a == nil || a.used {
		return
	}
	a.used = true
	a.cancel()
	<-a.done
	if a.r != nil {
		a.r.lg.Printf("not run: the matrix stopped; the servers started ahead are stopped")
		a.r.cleanup()
	}
}

// cellQueue deals the share's cells to the lanes, in order.
type cellQueue struct {
	mu    sync.Mutex
	order []int
	next  int
}

// take gives the next cell, false when none is left or when worth (if
// not nil) is false for it: a lane whose cell's clients are done asks for
// the next only if its servers are worth starting ahead.
func (q *cellQueue) take(worth func(int) bool) (int, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.next >= len(q.order) || (worth != nil && !worth(q.order[q.next])) {
		return 0, false
	}
	i := q.order[q.next]
	q.next++
	return i, true
}

// worthAhead says whether the i-th cell's servers are started ahead
// (matrix.Planned.StartsAhead: slow to start, and its own).
func (m *matrixRun) worthAhead(i int) bool {
	return m.share[i].StartsAhead()
}

// lane runs cells one after another until none is left or the matrix
// stops. Once a cell's clients stopped and its faults healed, the lane
// starts its next cell, while the one before checks, reports and stops
// its servers (laneCell): at most one cell of a lane winds down beside
// the one that runs. With MatrixOptions.Prestart, once the clients' time
// of its cell is up, it takes the next cell and starts its servers
// (worthAhead) while the cell winds down (heals its faults, waits for its
// last critical sections): they start beside no cell's clients but the
// other lanes', as without, so no run's timing changes. Whatever way it
// ends (an interrupt, a panic), the servers of a cell it will not run are
// stopped, and it returns once its cells have ended.
func (m *matrixRun) lane(ctx context.Context, q *cellQueue) {
	var next *ahead
	var tail <-chan struct{} // closed once the lane's previous cell has ended
	defer func() {
		if tail != nil {
			<-tail
		}
		next.abandon()
	}()
	var clientsDone func()
	if m.opt.Prestart {
		clientsDone = func() {
			if ctx.Err() != nil {
				return
			}
			if j, ok := q.take(m.worthAhead); ok {
				next = m.startAhead(ctx, j)
			}
		}
	}
	for {
		if m.stopped(ctx) {
			return
		}
		var i int
		var cur *ahead
		if next != nil {
			cur, next, i = next, nil, next.i
		} else {
			var ok bool
			if i, ok = q.take(nil); !ok {
				return
			}
		}
		ended := m.laneCell(ctx, i, cur, clientsDone)
		if tail != nil {
			<-tail
		}
		tail = ended
	}
}

// stopped says whether the matrix stops: interrupted, or ctx cancelled.
func (m *matrixRun) stopped(ctx context.Context) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m.Interrupted || ctx.Err() != nil
}
