package data

import "time"

// ReasonManual is the Result.Reason of a check nobody planned (run -url).
const ReasonManual = "manual"

// Stamp sets on a check's result who was checked and why (from c), when
// the check started and ended, how late it started, and the prober's
// version: the one place these fields are set, for a planned check (the
// runner, with the start its start log granted and its clock) and a one-off
// one (run -url) alike; the check itself sets only what it found. late is
// the lateness measured on a monotonic clock: the larger of it and
// start-c.At stands, so a wall clock stepped back mid-run never understates
// it. A check nobody planned (c.At zero) is never late.
func (r *Result) Stamp(c PlannedCheck, start, end time.Time, late time.Duration) {
	r.ID, r.URL, r.Host, r.Reason = c.ID, c.URL, c.Host, c.Reason
	if r.Host == "" {
		r.Host = HostOf(c.URL)
	}
	if r.Reason == "" {
		r.Reason = ReasonManual
	}
	r.Planned, r.Lateness = time.Time{}, 0
	if !c.At.IsZero() {
		r.Planned, r.Lateness = c.At.UTC(), max(start.Sub(c.At), late)
	}
	r.Started, r.Finished, r.Duration = start.UTC(), end.UTC(), end.Sub(start)
	r.ProberVersion = Version()
}
