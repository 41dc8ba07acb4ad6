package runner

import (
	"context"
	"testing"
	"time"
)

// scaledClock is a clock whose time runs speed times faster than the wall
// clock, from start: a minute of plan runs in a second of test. Its timers
// are real timers, scaled, so concurrent sleepers behave as in production.
type scaledClock struct {
	start time.Time // clock time at wall
	wall  time.Time
	speed float64
}

var _ Clock = (*scaledClock)(nil)

func newScaledClock(start time.Time, speed float64) *scaledClock {
	return &scaledClock{start: start, wall: time.Now(), speed: speed}
}

func (c *scaledClock) Now() time.Time {
	return c.start.Add(time.Duration(float64(time.Since(c.wall)) * c.speed))
}

func (c *scaledClock) Sleep(ctx context.Context, d time.Duration) error {
	return SystemClock{}.Sleep(ctx, time.Duration(float64(d)/c.speed))
}

func TestSleepUntilNeverEarly(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	// A clock whose timers fire early: SleepUntil must still not return
	// before the time asked for.
	c := newScaledClock(t0, 100)
	early := earlyClock{c}
	for i := 1; i <= 5; i++ {
		at := t0.Add(time.Duration(i) * 300 * time.Millisecond)
		if err := SleepUntil(context.Background(), early, at); err != nil {
			t.Fatal(err)
		}
		if now := c.Now(); now.Before(at) {
			t.Errorf("S9_never_early: woke at %v, before %v", now, at)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := SleepUntil(ctx, c, t0.Add(time.Hour)); err == nil {
		t.Error("SleepUntil with a done context returned nil")
	}
}

// earlyClock's Sleep returns after a third of the time asked.
type earlyClock struct{ *scaledClock }

func (c earlyClock) Sleep(ctx context.Context, d time.Duration) error {
	return c.scaledClock.Sleep(ctx, d/3)
}
