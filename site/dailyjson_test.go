package site

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestDailySeriesRuns writes a series with runs of days without a counted
// check, listed and not, as one entry a run, and reads it back a day a
// day; a file whose runs do not fit the series is refused.
func TestDailySeriesRuns(t *testing.T) {
	pct := 50.0
	ms := int64(7)
	s := DailySeries{
		{Date: "2026-11-28"}, {Date: "2026-11-29"}, // not listed yet
		{Date: "2026-11-30", Listed: true}, {Date: "2026-12-01", Listed: true},
		{Date: "2026-12-02", Listed: true, Counted: 2, Answered: 1, Percent: &pct, LatencyP50MS: &ms, LatencyP95MS: &ms},
		{Date: "2026-12-03", Listed: true, Counted: 2, Answered: 1, Percent: &pct, LatencyP50MS: &ms, LatencyP95MS: &ms},
		{Date: "2026-12-04", Listed: true},
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var runs []struct {
		Date string `json:"date"`
		Days int    `json:"days"`
	}
	if err := json.Unmarshal(b, &runs); err != nil {
		t.Fatal(err)
	}
	want := "2026-11-28x2 2026-11-30x2 2026-12-02x1 2026-12-03x1 2026-12-04x1"
	var got []string
	for _, r := range runs {
		got = append(got, r.Date+"x"+string(rune('0'+r.Days)))
	}
	if strings.Join(got, " ") != want {
		t.Errorf("entries %v, want %s:\n%s", got, want, b)
	}
	var back DailySeries
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Errorf("read back %+v, want %+v", back, s)
	}

	for _, c := range []struct{ name, in string }{
		{"no_days", `[{"date":"2026-12-01","days":0}]`},
		{"past_the_series", `[{"date":"2026-09-01","days":90},{"date":"2026-11-30","days":1}]`},
		{"bad_date", `[{"date":"2026-13-01","days":1}]`},
		{"not_a_list", `{"date":"2026-12-01"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s DailySeries
			if err := json.Unmarshal([]byte(c.in), &s); err == nil || !strings.Contains(err.Error(), "read daily series") {
				t.Errorf("%s read as %d days, err %v", c.in, len(s), err)
			}
		})
	}
}
