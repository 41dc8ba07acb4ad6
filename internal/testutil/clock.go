package testutil

import (
	"context"
	"sync"
	"time"
)

// JumpClock is a settable clock for tests that run simulated time: what a
// pipeline's injected clock reads (runner.Clock, a Now func). Its Sleep
// moves it on at once, and Set jumps it to a moment, so a test drives
// minutes, days or months without waiting. It is safe for concurrent use.
type JumpClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewJumpClock returns a JumpClock reading t.
func NewJumpClock(t time.Time) *JumpClock { return &JumpClock{t: t} }

// Now returns the clock's time.
func (c *JumpClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t, forward or back.
func (c *JumpClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Sleep moves the clock on by d at once; it returns ctx.Err().
func (c *JumpClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return ctx.Err()
}
