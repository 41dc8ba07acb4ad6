package metrics

import (
	"errors"
	"fmt"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
)

// PlanFigures are what only the planner knows of deferrals and host caps,
// read back from what it wrote: the minute's plan file and the ledger.
type PlanFigures struct {
	Known bool // false when neither could be read: nothing of this is written

	DeferredPlanned int           // checks of the minute planned in a later minute than they were due (rule S4)
	LongestPlanned  time.Duration // the longest of their waits
	DeferredWaiting int           // servers due by the end of the minute but not yet planned: the backlog the caps hold back
	OldestWaiting   time.Duration // how long the oldest of them has been due, at the end of the minute
	HostsAtHourCap  int           // hosts with data.HostMaxPerHour starts planned in the hour up to the minute's end (rule S3)
	HostsAtDayCap   int           // hosts with data.HostMaxPerDay starts planned in the 24 hours up to it
}

// ReadPlanFigures reads the deferrals and the hosts at their caps from the
// plan of minute and the ledger under the data directory dir. A ledger that
// cannot be read is an error (the figures are then not Known); so is a plan
// file that cannot, other than a missing one.
func ReadPlanFigures(dir string, minute time.Time) (PlanFigures, error) {
	var pf PlanFigures
	minute = minute.UTC().Truncate(time.Minute)
	end := minute.Add(time.Minute)
	checks, _, err := spool.ReadPlan(dir, minute) // the run names bad lines; figures count the rest
	if err != nil && !errors.Is(err, spool.ErrNoPlan) {
		return pf, fmt.Errorf("read plan figures: %w", err)
	}
	for _, c := range checks {
		if c.At.Truncate(time.Minute).After(c.Due.Truncate(time.Minute)) {
			pf.DeferredPlanned++
			pf.LongestPlanned = max(pf.LongestPlanned, c.At.Sub(c.Due))
		}
	}
	l, err := spool.ReadLedger(dir)
	if err != nil {
		return pf, fmt.Errorf("read plan figures: %w", err)
	}
	pf.Known = true
	endU := end.Unix()
	for _, s := range l.Servers {
		// NextDue is the planned start once planned, else the due time,
		// which stays in the past while the host caps defer the check.
		if s.NextDue == 0 || s.NextDue >= endU || s.NextDue == s.Planned || s.Resume >= endU {
			continue
		}
		pf.DeferredWaiting++
		pf.OldestWaiting = max(pf.OldestWaiting, time.Duration(endU-s.NextDue)*time.Second)
	}
	hourFrom, dayFrom := endU-int64(time.Hour/time.Second), endU-int64(24*time.Hour/time.Second)
	for _, starts := range l.Hosts {
		var hour, day int
		for _, h := range starts {
			if u := h.Unix(); u >= dayFrom && u < endU {
				day++
				if u >= hourFrom {
					hour++
				}
			}
		}
		if hour >= data.HostMaxPerHour {
			pf.HostsAtHourCap++
		}
		if day >= data.HostMaxPerDay {
			pf.HostsAtDayCap++
		}
	}
	return pf, nil
}

// add appends the figures, when known.
func (pf PlanFigures) add(f *family) {
	if !pf.Known {
		return
	}
	p := namespace + "_plan_"
	f.gauge(p+"deferred_checks", "Checks of the last run's minute planned in a later minute than due, as the host caps deferred them (rule S4).", float64(pf.DeferredPlanned))
	f.gauge(p+"deferred_longest_seconds", "The longest wait of those checks.", pf.LongestPlanned.Seconds())
	f.gauge(p+"deferred_waiting", "Servers due by the end of the last run's minute and not yet planned (the backlog the host caps hold back; growing means the caps cannot keep up).", float64(pf.DeferredWaiting))
	f.gauge(p+"deferred_oldest_seconds", "How long the longest-waiting of them has been due.", pf.OldestWaiting.Seconds())
	hosts := "Hosts whose planned starts reached a cap of rule S3"
	f.gauge(p+"hosts_at_hour_cap", hosts+" (120 in the hour up to the end of the minute).", float64(pf.HostsAtHourCap))
	f.gauge(p+"hosts_at_day_cap", hosts+" (3,000 in the 24 hours up to it).", float64(pf.HostsAtDayCap))
}
