package fsmtest

import (
	"sync"
	"time"
)

// Clock is a settable clock for tests, safe for concurrent use. Its Now
// method is the func() time.Time that the runtime's WithClock options
// take: a test moves time with Advance instead of sleeping.
type Clock struct {
	mu   sync.Mutex
	now  time.Time
	tick time.Duration
}

// NewClock returns a Clock that reads start until it is advanced.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time, then advances it by the tick set with
// Tick (none by default).
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now
	c.now = c.now.Add(c.tick)
	return now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Tick makes every later Now advance the clock by d after reading it, so
// that successive readings differ by d, and returns c.
func (c *Clock) Tick(d time.Duration) *Clock {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick = d
	return c
}
