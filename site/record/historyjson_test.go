package record

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
)

// TestHistoryColumns writes a history in columns, an entry a check in
// each, and reads it back a check a check; a check whose time was not
// measured has null in each phase's column and no timings read back. A
// file whose columns do not fit is refused.
func TestHistoryColumns(t *testing.T) {
	at := func(hours int) Time { return Time{time.Date(2026, 12, 2, 11-hours, 0, 0, 0, time.UTC)} }
	ms, dns, wait := int64(120), int64(3), int64(90)
	h := History{
		{Started: at(0), Status: data.Working, LatencyMS: &ms, Timings: &Phases{DNSMS: &dns, WaitMS: &wait}},
		{Started: at(1), Status: data.Failing, Detail: "HTTP 502", LatencyMS: &ms},
		{Started: at(2), Status: data.Failing, Detail: "connection refused"},
	}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"started":["2026-12-02T11:00:00.000Z","2026-12-02T10:00:00.000Z","2026-12-02T09:00:00.000Z"],"status":["working","failing","failing"],` +
		`"reason":[null,"HTTP 502","connection refused"],"latency_ms":[120,120,null],` +
		`"timings":{"dns_ms":[3,null,null],"connect_ms":[null,null,null],"tls_ms":[null,null,null],"wait_ms":[90,null,null]}}`
	if string(b) != want {
		t.Errorf("written\n%s\nwant\n%s", b, want)
	}
	var back History
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for i := range h {
		if !back[i].Started.Equal(h[i].Started.Time) {
			t.Errorf("check %d started %v, want %v", i, back[i].Started, h[i].Started)
		}
		back[i].Started = h[i].Started
	}
	if !reflect.DeepEqual(back, h) {
		t.Errorf("read back %+v, want %+v", back, h)
	}
	if b, err := json.Marshal(History{}); err != nil || string(b) != `{"started":[],"status":[],"reason":[],"latency_ms":[],"timings":{"dns_ms":[],"connect_ms":[],"tls_ms":[],"wait_ms":[]}}` {
		t.Errorf("no checks written as %s, %v", b, err)
	}

	// A file of the build before, a check an object, reads the same.
	rows := `[{"started":"2026-12-02T11:00:00.000Z","status":"working","latency_ms":120,"timings":{"dns_ms":3,"connect_ms":null,"tls_ms":null,"wait_ms":90}},` +
		`{"started":"2026-12-02T10:00:00.000Z","status":"failing","reason":"HTTP 502","latency_ms":120,"timings":null},` +
		`{"started":"2026-12-02T09:00:00.000Z","status":"failing","reason":"connection refused","latency_ms":null,"timings":null}]`
	var old History
	if err := json.Unmarshal([]byte(rows), &old); err != nil {
		t.Fatal(err)
	}
	for i := range old {
		old[i].Started = h[i].Started
	}
	if !reflect.DeepEqual(old, h) {
		t.Errorf("the build before's history read as %+v, want %+v", old, h)
	}

	col := func(n int, v string) string { return "[" + strings.TrimSuffix(strings.Repeat(v+",", n), ",") + "]" }
	of := func(n, short int) string {
		c := func(v string, k int) string {
			if k == short {
				return col(n-1, v)
			}
			return col(n, v)
		}
		return `{"started":` + c(`"2026-12-02T11:00:00.000Z"`, 0) + `,"status":` + c(`"working"`, 1) + `,"reason":` + c("null", 2) + `,"latency_ms":` + c("1", 3) +
			`,"timings":{"dns_ms":` + c("null", 4) + `,"connect_ms":` + c("null", 5) + `,"tls_ms":` + c("null", 6) + `,"wait_ms":` + c("null", 7) + `}}`
	}
	if err := json.Unmarshal([]byte(of(HistoryLen, -1)), &back); err != nil || len(back) != HistoryLen {
		t.Errorf("%d checks read as %d, %v", HistoryLen, len(back), err)
	}
	cases := []struct{ name, in string }{
		{"past_its_length", of(HistoryLen+1, -1)},
		{"not_an_object", `"2026-12-02T11:00:00.000Z"`},
		{"rows_past_its_length", "[" + strings.TrimSuffix(strings.Repeat(`{"started":"2026-12-02T11:00:00.000Z","status":"working","latency_ms":1},`, HistoryLen+1), ",") + "]"},
		{"rows_not_checks", `[{"started":1}]`},
	}
	for k := 1; k <= 7; k++ {
		cases = append(cases, struct{ name, in string }{"short_column_" + string(rune('0'+k)), of(3, k)})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var h History
			if err := json.Unmarshal([]byte(c.in), &h); err == nil || !strings.Contains(err.Error(), "read history") {
				t.Errorf("%s read as %d checks, err %v", c.in, len(h), err)
			}
		})
	}
}
