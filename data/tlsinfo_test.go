package data

import (
	"testing"
	"time"
)

// TestDaysLeft holds DaysLeft to calendar days (UTC), counted without
// overflow: a certificate valid to 9999-12-31 has millions of days left,
// not NotAfter.Sub's saturated -106751; one that expires the day after
// tomorrow reads "expires in 2 days" whatever the hour; the count changes
// at midnight UTC, which DaysLeftFrom gives.
func TestDaysLeft(t *testing.T) {
	expiry := time.Date(2026, 12, 20, 9, 30, 0, 0, time.UTC)
	cases := []struct {
		name     string
		notAfter time.Time
		now      time.Time
		days     int
		words    string
		expired  bool
	}{
		{"no_expiry_9999_12_31", time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), expiry, 2912089, "expires in 2912089 days", false},
		{"15_days_at_midnight", expiry, time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC), 15, "expires in 15 days", false},
		{"14_days_from_midnight", expiry, time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC), 14, "expires in 14 days", false},
		{"2_days_late_in_the_day", expiry, time.Date(2026, 12, 18, 23, 59, 0, 0, time.UTC), 2, "expires in 2 days", false},
		{"2_days_under_48_hours", expiry, time.Date(2026, 12, 18, 12, 0, 0, 0, time.UTC), 2, "expires in 2 days", false},
		{"tomorrow", expiry, time.Date(2026, 12, 19, 0, 0, 0, 0, time.UTC), 1, "expires tomorrow", false},
		{"today_before_expiry", expiry, time.Date(2026, 12, 20, 9, 29, 59, 0, time.UTC), 0, "expires today", false},
		{"today_at_expiry", expiry, expiry, 0, "expires today", true},
		{"the_day_after", expiry, time.Date(2026, 12, 21, 8, 0, 0, 0, time.UTC), -1, "", true},
		{"now_in_another_zone", expiry, time.Date(2026, 12, 19, 20, 0, 0, 0, time.FixedZone("UTC-5", -5*3600)), 0, "expires today", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := TLSInfo{NotAfter: tc.notAfter}
			if got := c.DaysLeft(tc.now); got != tc.days {
				t.Errorf("DaysLeft = %d, want %d", got, tc.days)
			}
			if got := c.Expired(tc.now); got != tc.expired {
				t.Errorf("Expired = %v, want %v", got, tc.expired)
			}
			if tc.words != "" && ExpiresIn(tc.days) != tc.words {
				t.Errorf("ExpiresIn(%d) = %q, want %q", tc.days, ExpiresIn(tc.days), tc.words)
			}
			if tc.days >= 0 && tc.days < 100 {
				from := c.DaysLeftFrom(tc.days)
				if c.DaysLeft(from) != tc.days || c.DaysLeft(from.Add(-time.Nanosecond)) != tc.days+1 || !from.After(tc.now.Add(-24*time.Hour)) || from.After(tc.now) {
					t.Errorf("DaysLeftFrom(%d) = %v: not the midnight the count came to %d", tc.days, from, tc.days)
				}
			}
		})
	}
}
