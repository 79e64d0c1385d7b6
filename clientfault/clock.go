package clientfault

import (
	"sync"
	"time"
)

// Clock is a client process's own clock. Lock code that reasons about time
// (how much of a lease is left, whether a Redlock grant is still valid)
// reads it instead of time.Now, so a nemesis can jump it and make it drift
// as a real machine's clock would. The history never uses it: the run has
// one monotonic clock of its own.
type Clock struct {
	mu        sync.Mutex
	realBase  time.Time // real instant of the last change
	clockBase time.Time // this clock's reading at realBase
	rate      float64   // clock seconds per real second
	// notify, when set, hears every change (OnChange).
	notify func(offset time.Duration, rate float64)
}

// OnChange makes f hear every jump, change of rate and reset of the clock,
// after it happened: how far the clock is ahead of the real one then, and
// its rate (f runs under the clock's lock: it must be quick). A client
// running as a process of its own sets its clock to follow.
func (c *Clock) OnChange(f func(offset time.Duration, rate float64)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notify = f
}

func (c *Clock) changed() {
	if c.notify != nil {
		real := time.Now()
		c.notify(c.nowLocked(real).Sub(real), c.rate)
	}
}

// NewClock returns a clock that agrees with the real one.
func NewClock() *Clock {
	now := time.Now()
	return &Clock{realBase: now, clockBase: now, rate: 1}
}

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked(time.Now())
}

func (c *Clock) nowLocked(real time.Time) time.Time {
	elapsed := real.Sub(c.realBase)
	if c.rate != 1 {
		elapsed = time.Duration(float64(elapsed) * c.rate)
	}
	return c.clockBase.Add(elapsed)
}

// Since is the time elapsed since t by this clock.
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Jump moves the clock by d (forward when positive) at once.
func (c *Clock) Jump(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	real := time.Now()
	c.clockBase, c.realBase = c.nowLocked(real).Add(d), real
	c.changed()
}

// SetRate makes the clock run at rate clock seconds per real second from
// now on (1 is true time; 1.1 runs 10% fast).
func (c *Clock) SetRate(rate float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	real := time.Now()
	c.clockBase, c.realBase, c.rate = c.nowLocked(real), real, rate
	c.changed()
}

// Reset makes the clock agree with the real one again.
func (c *Clock) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.realBase, c.clockBase, c.rate = now, now, 1
	c.changed()
}
