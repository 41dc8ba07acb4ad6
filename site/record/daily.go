package record

import (
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// DailyLen is how many days the daily series of a server's file covers.
const DailyLen = 90

const dayMS = int64(24 * time.Hour / time.Millisecond)

// daily returns the series of the DailyLen UTC days ending on the day of
// end (the last check's: see render), oldest first, for a server listed at
// added (zero: unknown, taken as listed). A day from the time the summary's
// checks are complete on (s.Complete) is counted from its checks; an
// earlier one is taken from the series published before (s.Days), as it
// was counted while its checks were kept, and so is a later one none of
// whose checks is new (KeepPublishedDays): a server checked hourly has 30
// days of checks, and a render of a new one counts one day again. A day is
// listed from the day of added on, and so is any day with counted checks
// whatever added says: a server removed and listed again has a later
// added, and the days it was checked before were listed days.
func (s *Summary) daily(end, added time.Time) []Day {
	first := end.UTC().Truncate(24*time.Hour).AddDate(0, 0, -(DailyLen - 1)).UnixMilli()
	// A day is counted again from its checks when it starts from
	// Complete on and ends after the earliest check added since its
	// days were published (KeepPublishedDays); any other is kept.
	kept := func(start int64) bool { return start < s.Complete || start+dayMS <= s.newFrom }
	from := first
	for from < first+DailyLen*dayMS && kept(from) {
		from += dayMS
	}
	checks := s.Checks[firstAt(s.Checks, from):]
	type acc struct {
		counted, answered int
		lat               []int64
		phases            phaseSamples
	}
	accs := make([]acc, DailyLen)
	day := func(c PastCheck) (int64, bool) {
		i := (c.At - first) / dayMS
		return i, c.At >= first && i < DailyLen && counts(c.Status)
	}
	// Each day's samples are carved from one block, as long as its
	// answered checks: a server checked hourly has some 30 days of 24,
	// five samples each, appended without growing a slice.
	var answered [DailyLen]int
	total := 0
	for _, c := range checks {
		if i, ok := day(c); ok && c.Status.Answered() {
			answered[i]++
			total++
		}
	}
	block := make([]int64, 0, 5*total)
	carve := func(n int) []int64 {
		b := block[len(block) : len(block) : len(block)+n]
		block = block[:len(block)+n]
		return b
	}
	for i, n := range answered {
		if n > 0 {
			a := &accs[i]
			a.lat = carve(n)
			a.phases = phaseSamples{dns: carve(n), connect: carve(n), tls: carve(n), wait: carve(n)}
		}
	}
	for _, c := range checks {
		i, ok := day(c)
		if !ok {
			continue
		}
		a := &accs[i]
		a.counted++
		if c.Status.Answered() {
			a.answered++
			if c.LatencyMS != nil {
				a.lat = append(a.lat, *c.LatencyMS)
			}
			a.phases.add(c.Phases)
		}
	}
	out := make([]Day, DailyLen)
	dates := datesFrom(time.UnixMilli(first))
	published := s.publishedDay(first)
	for i := range out {
		start := first + int64(i)*dayMS
		d := Day{Date: dates[i*len(time.DateOnly) : (i+1)*len(time.DateOnly)], Listed: added.IsZero() || added.UnixMilli() < start+dayMS}
		if kept(start) {
			if k, ok := published(i, d.Date); ok {
				old := s.Days[k]
				old.Listed = d.Listed || old.Counted > 0
				d = old
			}
			out[i] = d
			continue
		}
		a := accs[i]
		d.Counted, d.Answered = a.counted, a.answered
		d.Listed = d.Listed || a.counted > 0
		d.Percent = PercentOf(a.answered, a.counted)
		if len(a.lat) > 0 {
			slices.Sort(a.lat)
			d.LatencyP50MS, d.LatencyP95MS = nearestRank(a.lat, 50), nearestRank(a.lat, 95)
			d.Phases = a.phases.spreads()
		}
		out[i] = d
	}
	return out
}

// publishedDay returns a function that finds the day of s.Days dated
// date, the i-th from the day starting at first (Unix ms). s.Days are
// consecutive days in order (DailySeries), so the day is where its first
// day's date puts it, found without a search; one that is not there (the
// series is of another form, or the date past it) is searched for.
func (s *Summary) publishedDay(first int64) func(i int, date string) (int, bool) {
	offset, known := 0, false
	if len(s.Days) > 0 {
		if d0, err := time.Parse(time.DateOnly, s.Days[0].Date); err == nil {
			offset, known = int((first-d0.UnixMilli())/dayMS), true
		}
	}
	return func(i int, date string) (int, bool) {
		if k := offset + i; known && k >= 0 && k < len(s.Days) && s.Days[k].Date == date {
			return k, true
		}
		return slices.BinarySearchFunc(s.Days, date, func(o Day, date string) int { return strings.Compare(o.Date, date) })
	}
}

// nearestRank returns the p-th percentile of the ascending values by the
// nearest-rank method: the smallest value with at least p % at or below it.
func nearestRank(sorted []int64, p int) *int64 {
	k := (p*len(sorted) + 99) / 100
	v := sorted[max(k, 1)-1]
	return &v
}

// medianLatency returns the median latency of the answered checks of the
// window of length w ending at now; nil when none answered.
func (s *Summary) medianLatency(now time.Time, w time.Duration) *int64 {
	from, to := now.Add(-w).UnixMilli(), now.UnixMilli()
	var lat []int64
	for i := len(s.Checks) - 1; i >= 0 && s.Checks[i].At > from; i-- {
		if c := s.Checks[i]; c.At <= to && c.Status.Answered() && c.LatencyMS != nil {
			lat = append(lat, *c.LatencyMS)
		}
	}
	if len(lat) == 0 {
		return nil
	}
	slices.Sort(lat)
	return nearestRank(lat, 50)
}

// datesFrom returns the DailyLen dates (time.DateOnly) of the days from
// the day of from (UTC) on, one after the other. The servers a publish
// renders have the same days: the dates of the last day asked for are
// kept, written once rather than once a server, and twice (its series
// read, then written).
func datesFrom(from time.Time) string {
	y, m, d := from.UTC().Date()
	day := (int64(y)*12+int64(m))*31 + int64(d)
	if r := lastDates.Load(); r != nil && r.day == day {
		return r.dates
	}
	r := &dateRun{day: day, dates: string(appendDates(make([]byte, 0, DailyLen*len(time.DateOnly)), from, DailyLen))}
	lastDates.Store(r)
	return r.dates
}

// dateRun is what datesFrom returned last: the dates from day, a day
// numbered by its year, month and day.
type dateRun struct {
	day   int64
	dates string
}

var lastDates atomic.Pointer[dateRun]

// appendDates appends the n dates (time.DateOnly) of the days from the
// day of from (UTC) on, one after the other: what appending each day's
// Format does, without parsing the layout and normalizing a date a day
// (90 days a server rendered).
func appendDates(b []byte, from time.Time, n int) []byte {
	y, m, d := from.UTC().Date()
	for range n {
		if y < 1000 || y > 9999 {
			b = time.Date(y, m, d, 0, 0, 0, 0, time.UTC).AppendFormat(b, time.DateOnly)
		} else {
			b = strconv.AppendInt(b, int64(y), 10)
			b = append(b, '-', byte('0'+m/10), byte('0'+m%10), '-', byte('0'+d/10), byte('0'+d%10))
		}
		if d++; d > daysIn(y, m) {
			d, m = 1, m+1
			if m > time.December {
				y, m = y+1, time.January
			}
		}
	}
	return b
}
