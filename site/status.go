package site

import (
	"time"

	"plug.directory/prober/data"
)

// StatusStaleAfter is how long after the last publish, or the last minute
// run, the site should warn that checks have stopped: a minute is planned,
// run and published every minute, so five minutes is several missed.
const StatusStaleAfter = 5 * time.Minute

// Status is status.json: whether the checks are going, for the site to
// show "checks are running" or warn that they stopped. Unlike probe.json it
// changes with every publish.
type Status struct {
	Published         Time  `json:"published"`           // this publish
	LastMinuteRun     *Time `json:"last_minute_run"`     // the latest minute a run claimed; null when none has
	StaleAfterSeconds int64 `json:"stale_after_seconds"` // warn when published or last_minute_run is older than this
}

// statusOf returns the status as of now from the data directory dir. An
// unreadable marker directory is an error.
func statusOf(dir string, now time.Time) (Status, error) {
	s := Status{Published: Time{truncMS(now)}, StaleAfterSeconds: int64(StatusStaleAfter / time.Second)}
	last, err := data.LastMinuteRun(dir)
	if err != nil {
		return s, err
	}
	s.LastMinuteRun = timePtr(last)
	return s, nil
}
