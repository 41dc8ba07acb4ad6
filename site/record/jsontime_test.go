package record

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestAppendTimeAsFormat: a time is written digit by digit as
// AppendFormat writes TimeLayout, in any zone, at any year, its
// nanoseconds cut to the millisecond.
func TestAppendTimeAsFormat(t *testing.T) {
	zone := time.FixedZone("", -(9*3600 + 30*60))
	times := []time.Time{
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(999, 12, 31, 23, 59, 59, 999_999_999, zone),
		time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 1_000_000, time.UTC),
		time.Date(2028, 2, 29, 12, 0, 0, 999_999, zone),
		time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		{},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 10_000 {
		times = append(times, time.Unix(rng.Int64N(400_000_000_000)-200_000_000_000, rng.Int64N(1e9)).In(zone))
	}
	for _, tm := range times {
		want := tm.UTC().Format(TimeLayout)
		if got := string(AppendTime(nil, tm)); got != want {
			t.Fatalf("%v written as %s, AppendFormat writes %s", tm, got, want)
		}
		if got := string(appendTime(nil, Time{tm})); got != `"`+want+`"` {
			t.Fatalf("%v written in JSON as %s", tm, got)
		}
	}
}
