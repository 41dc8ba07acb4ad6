package site

import (
	"time"

	"plug.directory/prober/data/history"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/site/record"
)

// statusOf returns the status as of now from the data directory dir. An
// unreadable marker directory is an error; a record of the last minute
// recorded that does not decode is passed to bad and shown as none (the
// next run's mark replaces it), and a record of history damage that cannot
// be read in part is passed to bad, the rest shown.
func statusOf(dir string, now time.Time, bad func(error)) (record.Status, error) {
	s := record.Status{Published: record.Time{Time: record.TruncMS(now)}, StaleAfterSeconds: int64(record.StatusStaleAfter / time.Second)}
	last, err := spool.LastMinuteRun(dir)
	if err != nil {
		return s, err
	}
	s.LastMinuteRun = record.TimePtr(last)
	recorded, err := spool.LastMinuteRecorded(dir)
	if err != nil {
		bad(err)
	}
	s.LastMinuteRecorded = record.TimePtr(recorded)
	damage, unread, err := history.ReadHistoryDamage(dir)
	for _, b := range append(unread, err) {
		if b != nil {
			bad(b)
		}
	}
	s.HistoryLost = []record.LostChecks{}
	for _, h := range damage {
		if !h.Restored {
			s.HistoryLost = append(s.HistoryLost, record.LostChecks{Day: h.Day, Minutes: append([]string{}, h.Minutes...), Found: record.Time{Time: h.At}, Text: h.Lost()})
		}
	}
	return s, nil
}
