package site

import (
	"time"

	"plug.directory/prober/data/history"
	"plug.directory/prober/data/spool"
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
	Published          Time  `json:"published"`            // this publish
	LastMinuteRun      *Time `json:"last_minute_run"`      // the latest minute a run claimed; null when none has
	LastMinuteRecorded *Time `json:"last_minute_recorded"` // the latest minute whose run recorded every planned check (spool.MarkMinuteRecorded); null when none has
	StaleAfterSeconds  int64 `json:"stale_after_seconds"`  // warn when published or last_minute_recorded is older than this

	HistoryLost []LostChecks `json:"history_lost"` // checks the history lost to a file damaged in both its copies, oldest found first; [] when none
	// Unpublished are the servers whose files this publish could not
	// write, by id; [] when none. Each keeps the files it had, and the
	// next publish tries again.
	Unpublished []UnpublishedServer `json:"unpublished"`
}

// LostChecks is a part of the history lost to a damaged file: the site
// says so rather than show the days as if no check had run.
type LostChecks struct {
	Day     string   `json:"day"`     // the day of the checks, YYYY-MM-DD (UTC)
	Minutes []string `json:"minutes"` // the minutes (HH:MM UTC) of the runs whose checks are lost; [] when the file named none: the whole day
	Found   Time     `json:"found"`   // when the damage was found
	Text    string   `json:"text"`    // "checks of 2026-12-02 19:25 lost to a damaged file (…)"
}

// statusOf returns the status as of now from the data directory dir. An
// unreadable marker directory is an error; a record of the last minute
// recorded that does not decode is passed to bad and shown as none (the
// next run's mark replaces it), and a record of history damage that cannot
// be read in part is passed to bad, the rest shown.
func statusOf(dir string, now time.Time, bad func(error)) (Status, error) {
	s := Status{Published: Time{truncMS(now)}, StaleAfterSeconds: int64(StatusStaleAfter / time.Second)}
	last, err := spool.LastMinuteRun(dir)
	if err != nil {
		return s, err
	}
	s.LastMinuteRun = timePtr(last)
	recorded, err := spool.LastMinuteRecorded(dir)
	if err != nil {
		bad(err)
	}
	s.LastMinuteRecorded = timePtr(recorded)
	damage, unread, err := history.ReadHistoryDamage(dir)
	for _, b := range append(unread, err) {
		if b != nil {
			bad(b)
		}
	}
	s.HistoryLost = []LostChecks{}
	for _, h := range damage {
		if !h.Restored {
			s.HistoryLost = append(s.HistoryLost, LostChecks{Day: h.Day, Minutes: append([]string{}, h.Minutes...), Found: Time{h.At}, Text: h.Lost()})
		}
	}
	return s, nil
}
