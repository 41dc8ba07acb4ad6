package record

import (
	"encoding/json"
	"fmt"
	"time"
)

// DailySeries is a server's daily series: a Day a day, oldest first. In
// its file it is written in columns: its first date and number of days,
// the runs of days before it was listed, and for the days with counted
// checks only, their index and a column a figure (counted, answered,
// latencies, phases), a number or null each. What a day with nothing counted would
// say is known from its absence, and its percent from its counts: 90
// counted days weigh some 4 KB, where an object a day weighed 250 bytes,
// and a server checked on one day of 90 a few hundred bytes.
type DailySeries []Day

// dailyColumns is a daily series as its file writes it.
type dailyColumns struct {
	From     string       `json:"from"`     // the first day, YYYY-MM-DD
	Days     int          `json:"days"`     // how many days from it on
	Unlisted [][2]int     `json:"unlisted"` // the runs of days before the server was listed, without a counted check: the indexes of their first and last days
	Day      []int        `json:"day"`      // the indexes of the days with counted checks, ascending; each column has an entry for each
	Counted  []int        `json:"counted"`
	Answered []int        `json:"answered"`
	P50      []*int64     `json:"latency_p50_ms"`
	P95      []*int64     `json:"latency_p95_ms"`
	Phases   phaseColumns `json:"phases"`
}

// phaseColumns are the Spread of each phase of the counted days, a p50
// and a p95 column each.
type phaseColumns struct {
	DNS     spreadColumns `json:"dns_ms"`
	Connect spreadColumns `json:"connect_ms"`
	TLS     spreadColumns `json:"tls_ms"`
	Wait    spreadColumns `json:"wait_ms"`
}

type spreadColumns struct {
	P50 []*int64 `json:"p50"`
	P95 []*int64 `json:"p95"`
}

// phaseColumn is a phase's columns and a day's Spread of it.
type phaseColumn struct {
	c *spreadColumns
	s **Spread
}

// each returns the columns of each phase with the day's Spread of it, in
// the order of DayPhases.
func (p *phaseColumns) each(d *DayPhases) []phaseColumn {
	return []phaseColumn{{&p.DNS, &d.DNS}, {&p.Connect, &d.Connect}, {&p.TLS, &d.TLS}, {&p.Wait, &d.Wait}}
}

// MarshalJSON writes the series in columns (dailyColumns).
func (s DailySeries) MarshalJSON() ([]byte, error) {
	c := dailyColumnsOf(s)
	return c.appendJSON(make([]byte, 0, 400+60*len(c.Day))), nil
}

// dailyColumnsOf returns the columns of the series s.
func dailyColumnsOf(s DailySeries) dailyColumns {
	c := dailyColumns{Days: len(s), Unlisted: [][2]int{}, Day: []int{}, Counted: []int{}, Answered: []int{}, P50: []*int64{}, P95: []*int64{}}
	for _, ph := range c.Phases.each(&DayPhases{}) {
		ph.c.P50, ph.c.P95 = []*int64{}, []*int64{}
	}
	if len(s) > 0 {
		c.From = s[0].Date
	}
	for i, d := range s {
		if d.Counted == 0 {
			if n := len(c.Unlisted); !d.Listed && n > 0 && c.Unlisted[n-1][1] == i-1 {
				c.Unlisted[n-1][1] = i
			} else if !d.Listed {
				c.Unlisted = append(c.Unlisted, [2]int{i, i})
			}
			continue
		}
		c.Day = append(c.Day, i)
		c.Counted = append(c.Counted, d.Counted)
		c.Answered = append(c.Answered, d.Answered)
		c.P50 = append(c.P50, d.LatencyP50MS)
		c.P95 = append(c.P95, d.LatencyP95MS)
		phases := d.Phases
		if phases == nil {
			phases = &DayPhases{}
		}
		for _, ph := range c.Phases.each(phases) {
			var p50, p95 *int64
			if sp := *ph.s; sp != nil {
				p50, p95 = &sp.P50, &sp.P95
			}
			ph.c.P50, ph.c.P95 = append(ph.c.P50, p50), append(ph.c.P95, p95)
		}
	}
	return c
}

// UnmarshalJSON reads a series a file wrote, a Day a day again: at most
// DailyLen days, each index in the series and every column as long as
// day.
func (s *DailySeries) UnmarshalJSON(b []byte) error {
	if isList(b) {
		return s.unmarshalDays(b)
	}
	var c dailyColumns
	if !c.scan(b) {
		c = dailyColumns{}
		if err := json.Unmarshal(b, &c); err != nil {
			return fmt.Errorf("read daily series: %w", err)
		}
	}
	return s.fromColumns(&c)
}

// fromColumns sets s to the days of c, at most DailyLen, each index in
// the series and every column as long as day.
func (s *DailySeries) fromColumns(c *dailyColumns) error {
	if c.Days < 1 || c.Days > DailyLen {
		return fmt.Errorf("read daily series: %d days, not 1 to %d", c.Days, DailyLen)
	}
	from, err := time.Parse(time.DateOnly, c.From)
	if err != nil {
		return fmt.Errorf("read daily series: %w", err)
	}
	n := len(c.Day)
	lens := []int{len(c.Counted), len(c.Answered), len(c.P50), len(c.P95)}
	for _, ph := range c.Phases.each(&DayPhases{}) {
		lens = append(lens, len(ph.c.P50), len(ph.c.P95))
	}
	for _, l := range lens {
		if l != n {
			return fmt.Errorf("read daily series: a column of %d entries for %d counted days", l, n)
		}
	}
	out := make(DailySeries, c.Days)
	// The days' dates are cut from one string, and their percents and
	// phases from one block each: 90 days were some 700 allocations.
	all := datesFrom(from)
	for i := range out {
		out[i] = Day{Date: all[i*len(time.DateOnly) : (i+1)*len(time.DateOnly)], Listed: true}
	}
	prev := -1
	for _, r := range c.Unlisted {
		if r[0] <= prev || r[1] < r[0] || r[1] >= c.Days {
			return fmt.Errorf("read daily series: unlisted days %d to %d out of order or past %d days", r[0], r[1], c.Days)
		}
		for i := r[0]; i <= r[1]; i++ {
			out[i].Listed = false
		}
		prev = r[1]
	}
	percents := make([]float64, n)
	phaseBlock := make([]DayPhases, n)
	spreads := make([]Spread, 0, 4*n)
	prev = -1
	for k, i := range c.Day {
		if i <= prev || i >= c.Days || !out[i].Listed {
			return fmt.Errorf("read daily series: counted day %d out of order, past %d days or unlisted", i, c.Days)
		}
		if c.Counted[k] < 1 || c.Answered[k] < 0 || c.Answered[k] > c.Counted[k] {
			return fmt.Errorf("read daily series: day %d: %d answered of %d counted", i, c.Answered[k], c.Counted[k])
		}
		d := &out[i]
		d.Counted, d.Answered = c.Counted[k], c.Answered[k]
		percents[k] = *PercentOf(d.Answered, d.Counted)
		d.Percent = &percents[k]
		d.LatencyP50MS, d.LatencyP95MS = c.P50[k], c.P95[k]
		phases := &phaseBlock[k]
		for _, ph := range c.Phases.each(phases) {
			p50, p95 := ph.c.P50[k], ph.c.P95[k]
			if (p50 == nil) != (p95 == nil) {
				return fmt.Errorf("read daily series: day %d: a phase with one of its p50 and p95", i)
			}
			if p50 != nil {
				spreads = append(spreads, Spread{P50: *p50, P95: *p95})
				*ph.s = &spreads[len(spreads)-1]
			}
		}
		if *phases != (DayPhases{}) {
			d.Phases = phases
		}
		prev = i
	}
	*s = out
	return nil
}

// dayEntry is a day of a series as the builds before the columns wrote it:
// an object a day, or (the build just before) a run of Days days with
// nothing counted from its date on; no Days is one day.
type dayEntry struct {
	Day
	Days *int `json:"days"`
}

// unmarshalDays reads a series a build before the columns wrote, a list
// of days: the published file is the server's record (site.loadSummary),
// and a file an upgrade could not read would start its record afresh,
// losing the days, incidents and pauses only it kept. The same bounds
// hold: at most DailyLen days, consecutive, a run of at least one day.
func (s *DailySeries) unmarshalDays(b []byte) error {
	var entries []dayEntry
	if err := json.Unmarshal(b, &entries); err != nil {
		return fmt.Errorf("read daily series: %w", err)
	}
	var out DailySeries
	for _, e := range entries {
		n := 1
		if e.Days != nil {
			n = *e.Days
		}
		if n < 1 || len(out)+n > DailyLen {
			return fmt.Errorf("read daily series: a run of %d days from %s: not 1 to %d days in all", n, e.Date, DailyLen)
		}
		if n > 1 && e.Counted != 0 {
			return fmt.Errorf("read daily series: a run of %d days from %s with counted checks", n, e.Date)
		}
		from, err := time.Parse(time.DateOnly, e.Date)
		if err != nil {
			return fmt.Errorf("read daily series: %w", err)
		}
		if k := len(out); k > 0 && out[k-1].Date != from.AddDate(0, 0, -1).Format(time.DateOnly) {
			return fmt.Errorf("read daily series: %s does not follow %s", e.Date, out[k-1].Date)
		}
		if e.Answered < 0 || e.Answered > e.Counted {
			return fmt.Errorf("read daily series: %s: %d answered of %d counted", e.Date, e.Answered, e.Counted)
		}
		for i := range n {
			d := e.Day
			d.Date = from.AddDate(0, 0, i).Format(time.DateOnly)
			d.Percent = PercentOf(d.Answered, d.Counted)
			out = append(out, d)
		}
	}
	*s = out
	return nil
}
