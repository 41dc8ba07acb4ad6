package planner

import (
	"testing"
	"time"
)

// TestConfigClock: Config.Time is the one reading of the clock of a plan
// (cmd/plan's too), and NextMinute the minute it plans: Minute when set,
// else the clock's next whole minute (rule S9: never one that has begun).
func TestConfigClock(t *testing.T) {
	at := time.Date(2026, 12, 2, 11, 4, 30, 500, time.FixedZone("CET", 3600))
	reads := 0
	clock := func() time.Time { reads++; return at }
	for _, tc := range []struct {
		name  string
		cfg   Config
		want  time.Time
		reads int
	}{
		{"next_minute_of_the_clock", Config{Now: clock}, time.Date(2026, 12, 2, 10, 5, 0, 0, time.UTC), 1},
		{"minute_given", Config{Now: clock, Minute: at.Truncate(time.Minute)}, time.Date(2026, 12, 2, 10, 4, 0, 0, time.UTC), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reads = 0
			if got := tc.cfg.NextMinute(); !got.Equal(tc.want) || got.Location() != time.UTC || reads != tc.reads {
				t.Errorf("NextMinute() = %s (%s), %d clock reads; want %s UTC, %d", got, got.Location(), reads, tc.want, tc.reads)
			}
		})
	}
	if d := time.Since((Config{}).Time()); d < 0 || d > time.Minute {
		t.Errorf("Time() of a Config without Now is %s from time.Now", d)
	}
}
