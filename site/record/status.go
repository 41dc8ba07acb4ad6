package record

import "time"

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

// UnpublishedServer is one entry of status.json's unpublished: a server
// whose files the last publish could not write, and why.
type UnpublishedServer struct {
	ID     string `json:"id"`
	Reason string `json:"reason"` // the error, paths relative to the site's top ("servers/x.json") or the data directory ("DATA/...")
}
