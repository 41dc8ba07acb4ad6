package data

import (
	"testing"
	"time"
)

// TestStateApplyMovedAddress: a server moved to a new address; the last
// check of the old one (a retry that hit the 45 s timeout) ends after the
// first check of the new one. Folded in the order they ended, the state
// keeps the new address's result: the planner would otherwise take that
// check for lost and check the server as new twice (rule S5).
func TestStateApplyMovedAddress(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 55, 57, 0, time.UTC)
	old := Result{ID: "s", URL: "https://h.example/mcp", Status: Failing, Started: t0, Finished: t0.Add(45 * time.Second)}
	moved := Result{ID: "s", URL: "https://h.example/mcp/v2", Status: Working, Started: t0.Add(3 * time.Second), Finished: t0.Add(4 * time.Second)}
	for _, tc := range []struct {
		name  string
		order []Result
	}{
		{"new_address_ends_first", []Result{moved, old}},
		{"old_address_ends_first", []Result{old, moved}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s State
			for _, r := range tc.order {
				s.Apply(r)
			}
			if s.URL != moved.URL || !s.LastCheck.Equal(moved.Started) || s.LastStatus != Working || !s.FailingSince.IsZero() {
				t.Errorf("state %+v, want the new address's working check of %s and no failing streak", s, moved.Started)
			}
		})
	}
}
