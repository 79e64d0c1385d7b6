package workload

import (
	"context"
	"sync"
	"time"
)

// A client's lock requests each get a context that ends at the request's
// timeout (Config.OpTimeout), when the run's context ends, or when the
// request is over: what context.WithTimeout gives. That one costs every
// request a timer put into and taken out of the runtime's timer heap, a
// registration with the parent (whose lock every client's requests take),
// and five or six allocations — for a fast lock, the larger part of the
// harness's own cost a hold and of its garbage (docs/bench.md).
//
// opTimer gives the same context for the requests of one client, which
// come one at a time, from one timer of its own that lives as long as the
// client's loop, and one registration with the run's context. Requests
// only ever end later than the one before (one timeout, one monotonic
// clock), so the timer is rarely reset: when it fires at an earlier
// request's deadline, it finds the current request's later one and is set
// again for it. What a library sees is what context.WithTimeout shows:
// the same Deadline, Done closed at it, Err context.DeadlineExceeded then
// (context.Canceled once the request is over, the run's context's error
// once that ended), the parent's values, and context.Cause and contexts
// derived from it as from a standard one (it has the AfterFunc method the
// context package uses for a parent it does not know). opctx_test.go holds
// it to context.WithTimeout, case by case.
type opTimer struct {
	parent context.Context
	// parentDone is parent.Done(), looked at without parent's lock.
	parentDone <-chan struct{}
	// stopParent ends the one registration with parent.
	stopParent func() bool

	mu sync.Mutex
	t  *time.Timer
	// armedFor is the deadline the timer is set for; zero when it is not
	// set.
	armedFor time.Time
	// cur is the request in flight, nil between requests.
	cur *opCtx
	// cancel is the cancel function of a request start gave a standard
	// context.
	cancel context.CancelFunc
}

// newOpTimer returns the request contexts' source for one client, whose
// requests hang from parent. Call close when the client is done.
func newOpTimer(parent context.Context) *opTimer {
	o := &opTimer{parent: parent, parentDone: parent.Done()}
	o.t = time.AfterFunc(time.Hour, o.fire)
	o.t.Stop()
	o.stopParent = context.AfterFunc(parent, func() {
		o.mu.Lock()
		c := o.cur
		o.mu.Unlock()
		if c != nil {
			c.cancel(parent.Err())
		}
	})
	return o
}

// start returns the context of a request that must end within d; call
// end with it when the request is over (as a context.CancelFunc). One
// request at a time: the previous one's end is called before the next one
// starts.
func (o *opTimer) start(d time.Duration) context.Context {
	deadline := time.Now().Add(d)
	if pd, ok := o.parent.Deadline(); (ok && pd.Before(deadline)) || o.parentEnded() {
		// Not a client loop's case (a run's context has no deadline and
		// starts no request once ended): the standard context, as it was.
		ctx, cancel := context.WithDeadline(o.parent, deadline)
		o.cancel = cancel
		return ctx
	}
	c := &opCtx{parent: o.parent, parentDone: o.parentDone, deadline: deadline}
	o.mu.Lock()
	o.cur = c
	if o.armedFor.IsZero() || deadline.Before(o.armedFor) {
		o.t.Reset(time.Until(deadline))
		o.armedFor = deadline
	}
	o.mu.Unlock()
	// The run's context may have ended between the check above and c
	// being the current one, its AfterFunc finding none.
	if o.parentEnded() {
		c.cancel(o.parent.Err())
	}
	return c
}

// parentEnded reports whether the run's context has ended, by its Done
// channel: its Err would take its lock, which every client's requests
// share, twice a request.
func (o *opTimer) parentEnded() bool {
	select {
	case <-o.parentDone:
		return true
	default:
		return false
	}
}

// end is the end of the request whose context start returned: the context
// is cancelled (Canceled), as a CancelFunc does.
func (o *opTimer) end(ctx context.Context) {
	c, ok := ctx.(*opCtx)
	if !ok {
		o.cancel()
		return
	}
	o.mu.Lock()
	if o.cur == c {
		o.cur = nil
	}
	o.mu.Unlock()
	c.cancel(context.Canceled)
}

// fire is the timer's: it ends the current request if its deadline has
// come, and otherwise sets the timer for it (the timer was set for a
// request that is over).
func (o *opTimer) fire() {
	o.mu.Lock()
	o.armedFor = time.Time{}
	c := o.cur
	if c != nil {
		if left := time.Until(c.deadline); left > 0 {
			o.t.Reset(left)
			o.armedFor = c.deadline
			c = nil
		}
	}
	o.mu.Unlock()
	if c != nil {
		c.cancel(context.DeadlineExceeded)
	}
}

// close stops the timer and the registration with the parent; a request
// still in flight is ended.
func (o *opTimer) close() {
	o.stopParent()
	o.mu.Lock()
	o.t.Stop()
	o.armedFor = time.Time{}
	c := o.cur
	o.cur = nil
	o.mu.Unlock()
	if c != nil {
		c.cancel(context.Canceled)
	}
}

// closedChan is the Done channel of a context that was ended before
// anyone asked for its channel.
var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// opCtx is one request's context (see opTimer).
type opCtx struct {
	parent     context.Context
	parentDone <-chan struct{} // parent.Done(): nil when it never ends
	deadline   time.Time

	mu    sync.Mutex
	done  chan struct{} // made by the first Done, or closedChan
	err   error
	funcs []*afterFunc
}

// afterFunc is a function registered by AfterFunc, to run once c ends.
type afterFunc struct{ f func() }

// Deadline implements context.Context.
func (c *opCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// Done implements context.Context.
func (c *opCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
	}
	return c.done
}

// Err implements context.Context. A parent that ended is seen at once,
// as a standard child context sees it.
func (c *opCtx) Err() error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err != nil {
		return err
	}
	// A library may ask often: the parent's channel is looked at, not
	// its lock taken, which every client's requests would share.
	select {
	case <-c.parentDone:
		c.cancel(c.parent.Err())
		return c.Err()
	default:
		return nil
	}
}

// Value implements context.Context: the parent's values.
func (c *opCtx) Value(key any) any { return c.parent.Value(key) }

// String names the context, as the standard ones name themselves.
func (c *opCtx) String() string {
	return "workload.opCtx.WithDeadline(" + c.deadline.String() + ")"
}

// AfterFunc arranges to call f in its own goroutine once c ends, as
// context.AfterFunc does; the context package uses it for a context
// derived from c. The returned stop keeps f from being called, reporting
// whether it did.
func (c *opCtx) AfterFunc(f func()) func() bool {
	a := &afterFunc{f: f}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	c.funcs = append(c.funcs, a)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, g := range c.funcs {
			if g == a {
				c.funcs = append(c.funcs[:i], c.funcs[i+1:]...)
				return true
			}
		}
		return false
	}
}

// cancel ends c with err, once.
func (c *opCtx) cancel(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	if c.done == nil {
		c.done = closedChan
	} else {
		close(c.done)
	}
	funcs := c.funcs
	c.funcs = nil
	c.mu.Unlock()
	for _, a := range funcs {
		go a.f()
	}
}
