package runner

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
)

// TestProberFaultNotRecorded proves in the runner that a check
// that failed on the prober's side (rule N11: its source address) is never
// recorded against the server: the run stops with an error naming the check,
// the results before it stand, nothing is journaled for it or after it.
func TestProberFaultNotRecorded(t *testing.T) {
	t.Parallel()
	clock := SystemClock{} // virtual inside the bubble
	bubble(t, "N11_local_failure_stops_the_run", func(t *testing.T, now time.Time) {
		dir := t.TempDir()
		m := now.Add(time.Minute)
		var checks []data.PlannedCheck
		for i := range 4 {
			checks = append(checks, planned(fmt.Sprintf("s%d", i), fmt.Sprintf("h%d.lab.test", i), m.Add(time.Duration(i*10)*time.Second)))
		}
		MustPlan(t, dir, m, checks...)
		checker := &fakeChecker{check: func(_ context.Context, c data.PlannedCheck) data.Result {
			if c.ID == "s1" || c.ID == "s2" {
				return data.Result{Status: data.NotCheckable, Detail: "prober error: cannot connect from source address 192.0.2.1", ProberFault: true}
			}
			return data.Result{Status: data.Working, Detail: "1 tool"}
		}}
		sum, err := Run(t.Context(), Config{Dir: dir, Checker: checker, Clock: clock, Logger: slog.New(slog.DiscardHandler), Fold: noFold, Compact: noCompact}, m)
		if err == nil || !strings.Contains(err.Error(), "check s1") || !strings.Contains(err.Error(), "not recorded against the server") {
			t.Fatalf("run: err %v, want it to name check s1 as the prober's own failure", err)
		}
		rs := MustJournaled(t, dir)
		if len(rs) != 1 || rs[0].ID != "s0" {
			t.Fatalf("journaled %+v, want only s0 (s1 is the prober's fault, the rest never started)", rs)
		}
		if sum.Completed != 1 {
			t.Errorf("summary: %d completed, want 1", sum.Completed)
		}
	})
}
