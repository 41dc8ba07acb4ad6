package runner

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"plug.directory/prober/data"
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

// steppedClock is the (virtual, in a synctest bubble) system clock whose
// wall time can be stepped, as NTP steps it; its Stopwatch is not.
type steppedClock struct {
	base time.Time
	off  atomic.Int64 // nanoseconds added to the wall time
}

var _ Stopwatch = (*steppedClock)(nil)

func (c *steppedClock) Now() time.Time {
	return time.Now().Round(0).Add(time.Duration(c.off.Load()))
}
func (c *steppedClock) Elapsed() time.Duration { return time.Since(c.base) }
func (c *steppedClock) Sleep(ctx context.Context, d time.Duration) error {
	return SystemClock{}.Sleep(ctx, d)
}

// TestLatenessMonotonic: a wall clock stepped back 20 s mid-run delays the
// checks after the step by 20 s; their lateness says so (measured on the
// monotonic clock), while they still start at their planned second by the
// wall clock, never earlier.
func TestLatenessMonotonic(t *testing.T) {
	t.Parallel()
	bubble(t, "S9_clock_stepped_back_20s_mid_run", func(t *testing.T, now time.Time) {
		clock := &steppedClock{base: now}
		dir := t.TempDir()
		m := now.Truncate(time.Minute).Add(time.Minute)
		var checks []data.PlannedCheck
		for i, s := range []int{10, 30, 50} {
			checks = append(checks, planned(fmt.Sprintf("s%d", i), fmt.Sprintf("h%d.lab.test", i), m.Add(time.Duration(s)*time.Second)))
		}
		MustPlan(t, dir, m, checks...)
		go func() {
			time.Sleep(m.Add(20 * time.Second).Sub(now))
			clock.off.Add(int64(-20 * time.Second))
		}()
		sum, err := Run(t.Context(), Config{Dir: dir, Checker: workingAfter(clock, time.Second, nil), Clock: clock, Logger: slog.New(slog.DiscardHandler), Fold: noFold, Compact: noCompact}, m)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]time.Duration{"s0": 0, "s1": 20 * time.Second, "s2": 20 * time.Second}
		for _, r := range MustJournaled(t, dir) {
			if r.Lateness != want[r.ID] {
				t.Errorf("%s: lateness %s, want %s (the step delayed it)", r.ID, r.Lateness, want[r.ID])
			}
			if r.Started.Before(r.Planned) {
				t.Errorf("%s started %s, before its planned %s by the wall clock", r.ID, r.Started, r.Planned)
			}
		}
		if sum.MaxLateness != 20*time.Second {
			t.Errorf("summary max lateness %s, want 20s", sum.MaxLateness)
		}
	})
}
