package site

import (
	"encoding/json"
	"fmt"
	"time"
)

// DailySeries is a server's daily series: a Day a day, oldest first. In
// its file a run of consecutive days with nothing counted, listed or not
// alike, is one entry that says on how many days it stands for (`days`,
// from its `date` on), and every other entry stands for one day: 90 days
// of a server checked on few of them weigh a few hundred bytes, where each
// day spelled out weighed 130.
type DailySeries []Day

// dayRun is an entry of a daily series in a file: a day, and the days it
// stands for from its date on.
type dayRun struct {
	Day
	Days int `json:"days"`
}

// MarshalJSON writes the series with its runs of days without a counted
// check as one entry each.
func (s DailySeries) MarshalJSON() ([]byte, error) {
	runs := make([]dayRun, 0, len(s))
	for _, d := range s {
		if n := len(runs); n > 0 && d.Counted == 0 && runs[n-1].Counted == 0 && runs[n-1].Listed == d.Listed {
			runs[n-1].Days++
			continue
		}
		runs = append(runs, dayRun{Day: d, Days: 1})
	}
	return json.Marshal(runs)
}

// UnmarshalJSON reads a series a file wrote, a Day a day again: at most
// DailyLen days, each run of at least one day.
func (s *DailySeries) UnmarshalJSON(b []byte) error {
	var runs []dayRun
	if err := json.Unmarshal(b, &runs); err != nil {
		return fmt.Errorf("read daily series: %w", err)
	}
	var out DailySeries
	for _, r := range runs {
		if r.Days < 1 || len(out)+r.Days > DailyLen {
			return fmt.Errorf("read daily series: a run of %d days from %s: not 1 to %d days in all", r.Days, r.Date, DailyLen)
		}
		from, err := time.Parse(time.DateOnly, r.Date)
		if err != nil {
			return fmt.Errorf("read daily series: %w", err)
		}
		for i := range r.Days {
			d := r.Day
			d.Date = from.AddDate(0, 0, i).Format(time.DateOnly)
			out = append(out, d)
		}
	}
	*s = out
	return nil
}
