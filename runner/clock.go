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

// Stopwatch is a Clock that measures elapsed time apart from its wall
// time, as Go's monotonic clock does: a step of the wall clock does not
// move it. SystemClock needs none (time.Now carries the monotonic
// reading); a test clock that steps its wall time is one.
type Stopwatch interface {
	Clock
	Elapsed() time.Duration // since an arbitrary point fixed for the clock
}

// lap is a reading of a clock: its wall time and, for a Stopwatch, its
// elapsed time.
type lap struct {
	wall    time.Time
	elapsed time.Duration // the Stopwatch's reading, when stop
	stop    bool          // read from a Stopwatch
}

// readLap reads c, whose Now just returned wall.
func readLap(c Clock, wall time.Time) lap {
	l := lap{wall: wall}
	if s, ok := c.(Stopwatch); ok {
		l.elapsed, l.stop = s.Elapsed(), true
	}
	return l
}

// since returns the time from l0 to l on the monotonic clock: a Stopwatch's,
// else Go's (the wall clock's for times that carry no monotonic reading).
func (l lap) since(l0 lap) time.Duration {
	if l.stop && l0.stop {
		return l.elapsed - l0.elapsed
	}
	return l.wall.Sub(l0.wall)
}
