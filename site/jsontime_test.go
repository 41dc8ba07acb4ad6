package site

import (
	"encoding/json"
	"regexp"
	"sort"
	"testing"
	"time"

	"plug.directory/prober/site/record"
)

// publishedTime is the form of every published time.
var publishedTime = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)

// TestTimeOneForm: every published time is RFC 3339 UTC with three
// fractional digits, whatever its precision or zone, the JSON of Time and
// the hand-written index rows alike, so string order is time order; a
// time published before in another length reads back.
func TestTimeOneForm(t *testing.T) {
	t.Parallel()
	zone := time.FixedZone("CET", 3600)
	times := []time.Time{
		time.Date(2026, 12, 2, 18, 57, 1, 0, time.UTC),
		time.Date(2026, 12, 2, 18, 57, 0, 32_000_000, time.UTC),
		time.Date(2026, 12, 2, 18, 57, 0, 32_456_789, time.UTC), // nanoseconds: cut to the millisecond
		time.Date(2026, 12, 2, 19, 57, 0, 500_000_000, zone),
		time.Date(1999, 12, 31, 23, 59, 59, 999_000_000, time.UTC),
	}
	var strs []string
	for _, tm := range times {
		b, err := json.Marshal(record.Time{Time: tm})
		if err != nil {
			t.Fatal(err)
		}
		var s string
		if err := json.Unmarshal(b, &s); err != nil || !publishedTime.MatchString(s) {
			t.Errorf("%v: published as %s", tm, b)
		}
		if hand := string(record.AppendTime(nil, time.UnixMilli(tm.UnixMilli()))); hand != s {
			t.Errorf("%v: index rows say %s, files %s", tm, hand, s)
		}
		var back record.Time
		if err := json.Unmarshal(b, &back); err != nil || !back.Equal(tm.Truncate(time.Millisecond)) || back.Location() != time.UTC {
			t.Errorf("%s read back as %v, %v", b, back, err)
		}
		strs = append(strs, s)
	}
	sorted := append([]string(nil), strs...)
	sort.Strings(sorted)
	byTime := append([]time.Time(nil), times...)
	sort.Slice(byTime, func(i, j int) bool { return byTime[i].Before(byTime[j]) })
	for i, tm := range byTime {
		if want := tm.UTC().Format(record.TimeLayout); sorted[i] != want {
			t.Errorf("string order %v is not time order", sorted)
			break
		}
	}
	// Older files: any RFC 3339 length reads.
	for _, old := range []string{`"2026-12-02T18:57:01Z"`, `"2026-12-02T18:57:00.032Z"`, `"2026-12-02T18:57:00.032456789Z"`, `null`} {
		var tm record.Time
		if err := json.Unmarshal([]byte(old), &tm); err != nil {
			t.Errorf("read %s: %v", old, err)
		}
	}
}
