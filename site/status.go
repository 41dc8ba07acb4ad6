package site

import (
	"time"

	"plug.directory/prober/data"
)

// StatusStaleAfter is how long after the last publish, or the last minute
// recorded, the site should warn that checks have stopped: a minute is
// planned, run and published every minute, so five minutes is several
// missed.
const StatusStaleAfter = 5 * time.Minute

// Status is status.json: whether the checks are going, for the site to
// show "checks are running" or warn that they stopped. Unlike probe.json it
// changes with every publish.
type Status struct {
	Published          time.Time  `json:"published"`            // this publish
	LastMinuteRun      *time.Time `json:"last_minute_run"`      // the latest minute a run claimed; null when none has
	LastMinuteRecorded *time.Time `json:"last_minute_recorded"` // the latest minute whose run recorded every planned check (data.MarkMinuteRecorded); null when none has
	StaleAfterSeconds  int64      `json:"stale_after_seconds"`  // warn when published or last_minute_recorded is older than this
}

// statusOf returns the status as of now from the data directory dir. An
// unreadable marker directory is an error; a record of the last minute
// recorded that does not decode is passed to bad and shown as none (the
// next run's mark replaces it).
func statusOf(dir string, now time.Time, bad func(error)) (Status, error) {
	s := Status{Published: truncMS(now), StaleAfterSeconds: int64(StatusStaleAfter / time.Second)}
	last, err := data.LastMinuteRun(dir)
	if err != nil {
		return s, err
	}
	s.LastMinuteRun = orNone(last)
	recorded, err := data.LastMinuteRecorded(dir)
	if err != nil {
		bad(err)
	}
	s.LastMinuteRecorded = orNone(recorded)
	return s, nil
}

// orNone returns t in UTC, nil for the zero time.
func orNone(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
