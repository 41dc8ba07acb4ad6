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

// TestStateApplyLearned proves what the state learns (rule N4: later checks
// use what was learned): a protocol version and transport only from an
// answered check. A failing one, even one that got through a handshake,
// never pins what no answered check confirmed: the next check starts from
// the last answered one's, or from discovery.
func TestStateApplyLearned(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	const url = "https://h.example/mcp"
	modern := State{ID: "s", URL: url, LastCheck: t0, LastStatus: Working, LastAnswered: t0, Protocol: "2026-07-28", Transport: TransportStreamable}
	tests := []struct {
		name          string
		before        State
		status        Outcome
		proto, transp string // what the result says
		want          [2]string
	}{
		{"N4_working_learns", modern, Working, "2025-06-18", TransportStreamable, [2]string{"2025-06-18", TransportStreamable}},
		{"N4_needs_key_learns", modern, NeedsKey, "2025-11-25", TransportSSE, [2]string{"2025-11-25", TransportSSE}},
		{"N4_failing_after_a_handshake_does_not_pin", modern, Failing, "2024-11-05", TransportSSE, [2]string{"2026-07-28", TransportStreamable}},
		{"N4_failing_keeps_the_last_answered", modern, Failing, "", "", [2]string{"2026-07-28", TransportStreamable}},
		{"N4_failing_never_answered_learns_nothing", State{ID: "s", URL: url}, Failing, "2025-11-25", TransportStreamable, [2]string{"", ""}},
		{"N4_refused_learns_nothing", modern, Refused, "2024-11-05", TransportSSE, [2]string{"2026-07-28", TransportStreamable}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.before
			s.Apply(Result{ID: "s", URL: url, Status: tc.status, Protocol: tc.proto, Transport: tc.transp, Started: t0.Add(time.Hour)})
			if got := [2]string{s.Protocol, s.Transport}; got != tc.want {
				t.Errorf("state learned %q, want %q", got, tc.want)
			}
		})
	}
}
