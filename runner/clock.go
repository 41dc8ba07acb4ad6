package runner

import (
	"context"
	"time"
)

// Clock tells the time and waits. The runner never reads the wall clock
// itself, so tests inject a clock that runs faster than real time.
type Clock interface {
	Now() time.Time
	// Sleep waits for d to pass on this clock, or returns ctx.Err() when ctx
	// is done first.
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep waits for d or until ctx is done.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// SleepUntil waits until c says t has come, never returning earlier
// whatever the clock's timers do (rule S9: never early). It returns
// ctx.Err() when ctx is done first.
func SleepUntil(ctx context.Context, c Clock, t time.Time) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		d := t.Sub(c.Now())
		if d <= 0 {
			return nil
		}
		if err := c.Sleep(ctx, d); err != nil {
			return err
		}
	}
}
