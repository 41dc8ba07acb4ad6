package data

import (
	"testing"
	"time"
)

// TestStamp proves the one place a result's who, why and when are set: a
// planned check's lateness is the larger of start-planned and the monotonic
// lateness (a wall clock stepped back never understates it), a one-off
// check is never late and reads "manual", and every field is set whatever
// the check left in it.
func TestStamp(t *testing.T) {
	at := time.Date(2026, 12, 3, 10, 33, 5, 0, time.UTC)
	cases := []struct {
		name        string
		c           PlannedCheck
		start       time.Time
		late        time.Duration
		wantLate    time.Duration
		wantReason  string
		wantHost    string
		wantPlanned time.Time
	}{
		{"S9_planned_late_by_the_wall_clock", PlannedCheck{ID: "a", URL: "https://a.example/mcp", Host: "a.example", Reason: ReasonRoutine, At: at},
			at.Add(300 * time.Millisecond), 0, 300 * time.Millisecond, ReasonRoutine, "a.example", at},
		{"S9_wall_clock_stepped_back_monotonic_lateness_stands", PlannedCheck{ID: "a", URL: "https://a.example/mcp", Host: "a.example", Reason: ReasonNew, At: at},
			at.Add(-2 * time.Second), 700 * time.Millisecond, 700 * time.Millisecond, ReasonNew, "a.example", at},
		{"manual_check_never_late", PlannedCheck{ID: "one-off", URL: "https://b.example/mcp"},
			at, 5 * time.Second, 0, ReasonManual, "b.example", time.Time{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Result{ID: "left by the check", Host: "elsewhere.example", Lateness: time.Hour, Status: Working}
			end := tc.start.Add(1500 * time.Millisecond)
			r.Stamp(tc.c, tc.start.In(time.FixedZone("CET", 3600)), end, tc.late)
			if r.ID != tc.c.ID || r.URL != tc.c.URL || r.Host != tc.wantHost || r.Reason != tc.wantReason || r.ProberVersion != Version() {
				t.Errorf("identity %q %q %q %q %q", r.ID, r.URL, r.Host, r.Reason, r.ProberVersion)
			}
			if !r.Planned.Equal(tc.wantPlanned) || r.Lateness != tc.wantLate || r.Started != tc.start.UTC() || r.Finished != end.UTC() || r.Duration != 1500*time.Millisecond {
				t.Errorf("times planned %v late %v started %v finished %v took %v", r.Planned, r.Lateness, r.Started, r.Finished, r.Duration)
			}
			if r.Status != Working {
				t.Errorf("status %q: Stamp touched what the check found", r.Status)
			}
		})
	}
}
