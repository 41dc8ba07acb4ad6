package runner

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"plug.directory/prober/data"
)

// TestSharedAddress: a check planned for three servers at one address
// reaches the server once, and its result is journaled
// for each of them, by its own id and address.
func TestSharedAddress(t *testing.T) {
	t.Parallel()
	farm := MustLabFarm(t, 1)
	dir := t.TempDir()
	m1 := minute0.Add(time.Minute)
	lead := farm.URL(0, "x")
	MustPlan(t, dir, m1, data.PlannedCheck{At: m1.Add(time.Second), ID: "lead", URL: lead, Host: farm.Hosts[0],
		Reason: data.ReasonRoutine, Due: m1.Add(time.Second), Rank: 1,
		Also: []data.Listing{{ID: "same", URL: lead}, {ID: "spelt-otherwise", URL: lead + "#readme"}}})
	clock := newScaledClock(m1.Add(-time.Second), 20)
	sum, err := Run(context.Background(), Config{Dir: dir, Checker: MustLabChecker(t, farm, clock), Clock: clock, Logger: slog.New(slog.DiscardHandler)}, m1)
	if err != nil {
		t.Fatal(err)
	}
	rs := MustHistory(t, dir)
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	if want := []string{"lead", "same", "spelt-otherwise"}; !slices.Equal(ids, want) {
		t.Fatalf("journaled %v, want one result for each of %v", ids, want)
	}
	want := map[string]string{"lead": lead, "same": lead, "spelt-otherwise": lead + "#readme"}
	for _, r := range rs {
		if r.Status != data.Working || r.URL != want[r.ID] || !r.Started.Equal(rs[0].Started) || r.Requests != rs[0].Requests {
			t.Errorf("%s: %s at %s, started %s with %d requests; want working at its own address, the one check's result",
				r.ID, r.Status, r.URL, r.Started, r.Requests)
		}
	}
	if got := farm.Hits(farm.Hosts[0]); got != rs[0].Requests || got < 2 {
		t.Errorf("the server saw %d requests, want the one check's %d", got, rs[0].Requests)
	}
	if sum.Planned != 1 || sum.Completed != 1 {
		t.Errorf("summary: %d planned, %d completed, want 1 check", sum.Planned, sum.Completed)
	}
}
