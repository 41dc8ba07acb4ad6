package lists

import (
	"errors"
	"testing"
	"time"
)

// TestListRowsToSay: the same bad rows are said once a day, by whichever
// reader comes first; changed rows are said at once; no rows, nothing.
func TestListRowsToSay(t *testing.T) {
	dir := t.TempDir()
	T0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	rows := []error{errors.New(`servers.csv:6: duplicate id "a" (first on line 2, kept)`), errors.New("servers.csv:7: bad rank")}
	const sum = "ranked list servers.csv: …"
	for _, c := range []struct {
		lines []error
		at    time.Time
		want  bool
	}{
		{rows, T0, true},
		{rows, T0.Add(30 * time.Second), false}, // publish after plan
		{rows, T0.Add(23 * time.Hour), false},
		{rows, T0.Add(24 * time.Hour), true}, // a day later
		{rows, T0.Add(24*time.Hour + time.Minute), false},
		{rows[:1], T0.Add(24*time.Hour + 2*time.Minute), true}, // changed
		{nil, T0.Add(48 * time.Hour), true},                    // the summary alone (servers without an address)
		{rows, T0.Add(24*time.Hour + 3*time.Minute), true},     // changed back
	} {
		if got := ListRowsToSay(dir, c.lines, sum, c.at); got != c.want {
			t.Errorf("%d lines at %s: %v, want %v", len(c.lines), c.at.Format(time.RFC3339), got, c.want)
		}
	}
	if ListRowsToSay(dir, nil, "", T0.Add(72*time.Hour)) {
		t.Error("nothing to say, said")
	}
	if !ListRowsToSay("", rows, sum, T0) {
		t.Error("no data directory (a simulation): silenced")
	}
}
