package cluster

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
}

// SetRate makes the clock run at rate clock seconds per real second from
// now on (1 is true time; 1.1 runs 10% fast).
func (c *Clock) SetRate(rate float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	real := time.Now()
	c.clockBase, c.realBase, c.rate = c.nowLocked(real), real, rate
}

// Reset makes the clock agree with the real one again.
func (c *Clock) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.realBase, c.clockBase, c.rate = now, now, 1
}
