package record

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestDailySeriesColumns writes a series in columns, the days with
// counted checks only, and reads it back a day a day; a file whose
// columns do not fit the series is refused.
func TestDailySeriesColumns(t *testing.T) {
	half, all := 50.0, 100.0
	ms, ms2 := int64(7), int64(9)
	s := DailySeries{
		{Date: "2026-11-28"}, {Date: "2026-11-29"}, // not listed yet
		{Date: "2026-11-30", Listed: true}, {Date: "2026-12-01"}, // listed, and not: listed again later
		{Date: "2026-12-02", Listed: true, Counted: 2, Answered: 1, Percent: &half, LatencyP50MS: &ms, LatencyP95MS: &ms2,
			Phases: &DayPhases{Connect: &Spread{P50: 1, P95: 2}, Wait: &Spread{P50: 3, P95: 4}}},
		{Date: "2026-12-03", Listed: true, Counted: 3, Answered: 0, Percent: new(float64)},
		{Date: "2026-12-04", Listed: true, Counted: 1, Answered: 1, Percent: &all, LatencyP50MS: &ms, LatencyP95MS: &ms},
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"from":"2026-11-28","days":7,"unlisted":[[0,1],[3,3]],"day":[4,5,6],"counted":[2,3,1],"answered":[1,0,1],` +
		`"latency_p50_ms":[7,null,7],"latency_p95_ms":[9,null,7],"phases":{"dns_ms":{"p50":[null,null,null],"p95":[null,null,null]},` +
		`"connect_ms":{"p50":[1,null,null],"p95":[2,null,null]},"tls_ms":{"p50":[null,null,null],"p95":[null,null,null]},` +
		`"wait_ms":{"p50":[3,null,null],"p95":[4,null,null]}}}`
	if string(b) != want {
		t.Errorf("written\n%s\nwant\n%s", b, want)
	}
	var back DailySeries
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Errorf("read back %+v, want %+v", back, s)
	}

	empty := `"phases":{"dns_ms":{"p50":[],"p95":[]},"connect_ms":{"p50":[],"p95":[]},"tls_ms":{"p50":[],"p95":[]},"wait_ms":{"p50":[],"p95":[]}}`
	one := `"counted":[1],"answered":[1],"latency_p50_ms":[1],"latency_p95_ms":[1],` + strings.ReplaceAll(empty, "[]", "[null]")
	for _, c := range []struct{ name, in string }{
		{"no_days", `{"from":"2026-12-01","days":0,"day":[],"counted":[],"answered":[],"latency_p50_ms":[],"latency_p95_ms":[],` + empty + `}`},
		{"past_the_series", `{"from":"2026-12-01","days":91,"day":[],"counted":[],"answered":[],"latency_p50_ms":[],"latency_p95_ms":[],` + empty + `}`},
		{"bad_date", `{"from":"2026-13-01","days":1,"day":[],"counted":[],"answered":[],"latency_p50_ms":[],"latency_p95_ms":[],` + empty + `}`},
		{"short_column", `{"from":"2026-12-01","days":3,"day":[1],"counted":[],"answered":[1],"latency_p50_ms":[1],"latency_p95_ms":[1],` + strings.ReplaceAll(empty, "[]", "[null]") + `}`},
		{"day_past_days", `{"from":"2026-12-01","days":3,"day":[3],` + one + `}`},
		{"days_out_of_order", `{"from":"2026-12-01","days":3,"day":[2,1],` + strings.ReplaceAll(strings.ReplaceAll(one, "[1]", "[1,1]"), "[null]", "[null,null]") + `}`},
		{"counted_and_unlisted", `{"from":"2026-12-01","days":3,"unlisted":[[0,1]],"day":[1],` + one + `}`},
		{"unlisted_backwards", `{"from":"2026-12-01","days":3,"unlisted":[[1,0]],"day":[],"counted":[],"answered":[],"latency_p50_ms":[],"latency_p95_ms":[],` + empty + `}`},
		{"unlisted_overlapping", `{"from":"2026-12-01","days":3,"unlisted":[[0,1],[1,2]],"day":[],"counted":[],"answered":[],"latency_p50_ms":[],"latency_p95_ms":[],` + empty + `}`},
		{"unlisted_past_days", `{"from":"2026-12-01","days":3,"unlisted":[[2,3]],"day":[],"counted":[],"answered":[],"latency_p50_ms":[],"latency_p95_ms":[],` + empty + `}`},
		{"more_answered_than_counted", `{"from":"2026-12-01","days":3,"day":[1],` + strings.Replace(one, `"answered":[1]`, `"answered":[2]`, 1) + `}`},
		{"half_a_phase", `{"from":"2026-12-01","days":3,"day":[1],` + strings.Replace(one, `{"p50":[null]`, `{"p50":[1]`, 1) + `}`},
		{"not_an_object", `"2026-12-01"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s DailySeries
			if err := json.Unmarshal([]byte(c.in), &s); err == nil || !strings.Contains(err.Error(), "read daily series") {
				t.Errorf("%s read as %d days, err %v", c.in, len(s), err)
			}
		})
	}
}

// TestDailySeriesEarlierForms: a file published by a build before the
// columns (an object a day, then runs of days without a counted check) is
// read as the same series, so an upgrade keeps every server's record; the
// bounds of the columns hold for it too.
func TestDailySeriesEarlierForms(t *testing.T) {
	half := 50.0
	ms := int64(7)
	s := DailySeries{
		{Date: "2026-11-28"}, {Date: "2026-11-29"},
		{Date: "2026-11-30", Listed: true}, {Date: "2026-12-01", Listed: true},
		{Date: "2026-12-02", Listed: true, Counted: 2, Answered: 1, Percent: &half, LatencyP50MS: &ms, LatencyP95MS: &ms,
			Phases: &DayPhases{Wait: &Spread{P50: 3, P95: 4}}},
	}
	aDay, err := json.Marshal([]Day(s)) // an object a day, as each was written first
	if err != nil {
		t.Fatal(err)
	}
	runs := `[{"date":"2026-11-28","listed":false,"counted":0,"answered":0,"percent":null,"latency_p50_ms":null,"latency_p95_ms":null,"phases":null,"days":2},` +
		`{"date":"2026-11-30","listed":true,"counted":0,"answered":0,"percent":null,"latency_p50_ms":null,"latency_p95_ms":null,"phases":null,"days":2},` +
		`{"date":"2026-12-02","listed":true,"counted":2,"answered":1,"percent":50,"latency_p50_ms":7,"latency_p95_ms":7,` +
		`"phases":{"dns_ms":null,"connect_ms":null,"tls_ms":null,"wait_ms":{"p50":3,"p95":4}},"days":1}]`
	for name, in := range map[string]string{"a_day_an_object": string(aDay), "runs_of_days": runs} {
		t.Run(name, func(t *testing.T) {
			var back DailySeries
			if err := json.Unmarshal([]byte(in), &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, s) {
				t.Errorf("read back %+v, want %+v", back, s)
			}
		})
	}
	for _, c := range []struct{ name, in string }{
		{"no_days", `[{"date":"2026-12-01","days":0}]`},
		{"past_the_series", `[{"date":"2026-12-01","days":91}]`},
		{"a_run_counted", `[{"date":"2026-12-01","days":2,"counted":1,"answered":1}]`},
		{"a_gap", `[{"date":"2026-12-01"},{"date":"2026-12-03"}]`},
		{"bad_date", `[{"date":"2026-13-01"}]`},
		{"more_answered_than_counted", `[{"date":"2026-12-01","counted":1,"answered":2}]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s DailySeries
			if err := json.Unmarshal([]byte(c.in), &s); err == nil || !strings.Contains(err.Error(), "read daily series") {
				t.Errorf("%s read as %d days, err %v", c.in, len(s), err)
			}
		})
	}
}

// TestAppendDates: the dates of consecutive days are those time.Format
// writes of each, across months, leap days, years and the years outside
// four digits.
func TestAppendDates(t *testing.T) {
	t.Parallel()
	for _, from := range []time.Time{
		time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC),   // the next day: not the dates kept
		time.Date(2028, 2, 27, 23, 59, 0, 0, time.UTC), // a leap day
		time.Date(2100, 2, 28, 0, 0, 0, 0, time.UTC),   // no leap day
		time.Date(2000, 2, 28, 0, 0, 0, 0, time.UTC),   // a leap day
		time.Date(999, 12, 30, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 30, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 29, 1, 0, 0, 0, time.FixedZone("CEST", 2*3600)), // 28 March in UTC
	} {
		var want []byte
		for i := range 400 {
			want = from.UTC().AddDate(0, 0, i).AppendFormat(want, time.DateOnly)
		}
		if got := appendDates(nil, from, 400); string(got) != string(want) {
			t.Errorf("from %v: %.40q..., want %.40q...", from, got, want)
		}
		// datesFrom keeps the last day's: asked again, or for another
		// day, the dates are that day's.
		for range 2 {
			if got, want := datesFrom(from), appendDates(nil, from, DailyLen); got != string(want) {
				t.Errorf("dates from %v: %.40q..., want %.40q...", from, got, want)
			}
		}
	}
}
