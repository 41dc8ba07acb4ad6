package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/planner"
)

// at returns server id of rank at the address rawURL.
func at(id string, rank int, rawURL string) data.Server {
	return data.Server{ID: id, Rank: rank, URL: rawURL, Added: t0.Add(-48 * time.Hour)}
}

// alsoIDs returns the ids a check names besides its own.
func alsoIDs(c data.PlannedCheck) []string {
	var ids []string
	for _, o := range c.Also {
		ids = append(ids, o.ID)
	}
	return ids
}

// TestSharedRules: servers listed at one address are one
// check, at the address's slot and best cadence, counted once by the host
// caps, paused together. Every run is audited (world.MustRun).
func TestSharedRules(t *testing.T) {
	t.Parallel() // a simulation of its own, on the CPU: alongside the others
	const addr = "https://shared.example.net/mcp"
	t.Run("S1_S2_one_check_hourly_at_the_address_slot", func(t *testing.T) {
		// A daily server (rank 5000) and an hourly one (rank 7) at one
		// address, and a third spelling it otherwise: one check an hour,
		// led by the best ranked, at the address's own second.
		list := fixed(at("tail", 5000, addr), at("top", 7, addr), at("caps", 9000, "HTTPS://Shared.Example.NET.:443/mcp#about"),
			srv("alone", 8, "other.example.net"))
		checks, s := world{list: list}.MustRun(t, 26*time.Hour)
		var mine []data.PlannedCheck
		for _, c := range checks {
			if c.Host == "shared.example.net" {
				mine = append(mine, c)
			}
		}
		if len(mine) < 25 || !all(gaps(mine), time.Hour) {
			t.Fatalf("the address: %d checks, gaps %v; want one an hour", len(mine), gaps(mine))
		}
		slot := planner.SlotOfAddress(addr)
		for _, c := range mine {
			if c.ID != "top" || !slices.Equal(alsoIDs(c), []string{"tail", "caps"}) || c.Rank != 7 {
				t.Fatalf("check %s (rank %d) also for %v; want top (rank 7) for tail and caps", c.ID, c.Rank, alsoIDs(c))
			}
			if got := time.Duration(c.At.Unix()%3600) * time.Second; got != slot%time.Hour {
				t.Errorf("checked at %s, not at the address's %v past the hour", c.At.Format(time.RFC3339), slot%time.Hour)
			}
		}
		if planner.SlotOfAddress(addr) != planner.SlotOfAddress("HTTPS://Shared.Example.NET.:443/mcp#about") {
			t.Error("two spellings of one address have two slots")
		}
		for _, id := range []string{"tail", "caps"} {
			st := s.States[id]
			e, _ := s.Ledger.Lookup(id)
			if st.LastCheck.IsZero() || !st.LastCheck.Equal(s.States["top"].LastCheck) || e.EffectiveCadence() != data.HourlyCadence {
				t.Errorf("%s: last check %s, cadence %v; want top's %s, hourly", id, st.LastCheck, e.EffectiveCadence(), s.States["top"].LastCheck)
			}
		}
	})

	t.Run("S2_slot_stays_when_listings_come_and_go", func(t *testing.T) {
		// b joins a's address after 3 h and c replaces a as the best
		// ranked after 6 h: the address keeps its second of the hour.
		list := func(now time.Time) []data.Server {
			out := []data.Server{at("a", 3, addr)}
			if now.Sub(t0) >= 3*time.Hour {
				out = append(out, at("b", 4, addr))
			}
			if now.Sub(t0) >= 6*time.Hour {
				out = append(out, at("c", 1, addr))
			}
			lists.SortServers(out)
			return out
		}
		checks, _ := world{list: list}.MustRun(t, 12*time.Hour)
		var shared []data.PlannedCheck
		for _, c := range checks {
			if len(c.Also) > 0 {
				shared = append(shared, c)
			}
		}
		if len(shared) < 7 {
			t.Fatalf("%d checks of the shared address", len(shared))
		}
		for _, c := range shared[1:] { // the first may be due at a's own slot, planned before b came
			if got := time.Duration(c.At.Unix()%3600) * time.Second; got != planner.SlotOfAddress(addr)%time.Hour {
				t.Errorf("%s checked at %s, not at the address's %v", c.ID, c.At.Format(time.RFC3339), planner.SlotOfAddress(addr)%time.Hour)
			}
		}
		for _, c := range checks {
			if c.Reason == data.ReasonNew {
				t.Errorf("%s checked as new at %s: it joined an address already checked", c.ID, c.At.Format(time.RFC3339))
			}
		}
	})

	t.Run("S3_host_caps_count_it_once", func(t *testing.T) {
		// 50 hourly servers at one address and one more on the host: 2
		// checks of the host an hour, not 51 (beyond 120 an hour the caps
		// would stretch them).
		var servers []data.Server
		for i := range 50 {
			servers = append(servers, at(fmt.Sprintf("s%02d", i), i+1, "https://busy.example.net/mcp"))
		}
		servers = append(servers, srv("own", 60, "busy.example.net"))
		checks, s := world{list: fixed(servers...)}.MustRun(t, 5*time.Hour)
		for _, c := range checks {
			if c.Every != 0 || c.ID != "s00" && c.ID != "own" {
				t.Fatalf("check %s, every %d s: want s00 for all 50, own alone, at their tier's pace", c.ID, c.Every)
			}
		}
		if h := s.Audit.hosts["busy.example.net"]; h == nil || h.maxHour != 2 || len(checks) < 9 || len(checks) > 12 {
			t.Errorf("%d checks in 5 h, at most %v in an hour; want 2 an hour", len(checks), h)
		}
		if st := s.States["s49"]; st.LastCheck.IsZero() {
			t.Error("s49 has no result: the one check was not journaled for it")
		}
	})

	t.Run("S5_new_address_new_once", func(t *testing.T) {
		// Two servers listed together at a new address: one new check for
		// both, within minutes.
		list := func(now time.Time) []data.Server {
			out := []data.Server{srv("old", 5, "old.example.net")}
			if now.Sub(t0) >= 2*time.Hour {
				out = append(out, at("n1", 6, addr), at("n2", 7, addr))
			}
			lists.SortServers(out)
			return out
		}
		checks, _ := world{list: list}.MustRun(t, 4*time.Hour)
		var firsts []data.PlannedCheck
		for _, c := range checks {
			if c.Host == "shared.example.net" && c.Reason == data.ReasonNew {
				firsts = append(firsts, c)
			}
		}
		if len(firsts) != 1 || firsts[0].ID != "n1" || !slices.Equal(alsoIDs(firsts[0]), []string{"n2"}) ||
			firsts[0].At.Sub(t0.Add(2*time.Hour)) > data.NewServerTarget {
			t.Errorf("new checks of the address: %v; want one, n1 for n2, within %v", firsts, data.NewServerTarget)
		}
	})

	// b spells the address with a trailing dot on its host: the same
	// endpoint.
	pauseWorld := []data.Server{at("a", 3, addr), at("b", 4, "https://shared.example.net./mcp")}
	pausedList := func(text string) func(now time.Time) map[string]bool {
		return func(now time.Time) map[string]bool {
			if now.Sub(t0) < 2*time.Hour {
				return nil
			}
			l, bad, err := lists.ParsePausedList("paused.txt", strings.NewReader(text))
			if err != nil || len(bad) > 0 {
				panic(fmt.Sprint(err, bad))
			}
			ids, _ := l.Match(pauseWorld)
			return ids
		}
	}
	idsOnly := func(ids ...string) func(now time.Time) map[string]bool {
		return func(now time.Time) map[string]bool {
			if now.Sub(t0) < 2*time.Hour {
				return nil
			}
			m := map[string]bool{}
			for _, id := range ids {
				m[id] = true
			}
			return m
		}
	}
	for _, c := range []struct {
		name   string
		paused func(now time.Time) map[string]bool
	}{
		{"S8_pause_naming_the_lead_pauses_both", pausedList("a\n")},
		{"S8_pause_naming_the_other_pauses_both", pausedList("b\n")},
		{"S8_pause_naming_the_address_pauses_both", pausedList("HTTPS://shared.example.net/mcp\n")},
		{"S8_planner_given_one_id_pauses_both", idsOnly("b")},
	} {
		t.Run(c.name, func(t *testing.T) {
			list := fixed(pauseWorld...)
			checks, s := world{list: list, paused: c.paused}.MustRun(t, 6*time.Hour)
			before := 0
			for _, k := range checks {
				if k.At.Sub(t0) >= 2*time.Hour {
					t.Errorf("%s (also %v) checked at %s, after the pause", k.ID, alsoIDs(k), k.At.Format(time.RFC3339))
				}
				before++
			}
			if before < 2 {
				t.Errorf("%d checks before the pause, want one an hour", before)
			}
			for _, id := range []string{"a", "b"} {
				if e, _ := s.Ledger.Lookup(id); e.NextDue != 0 {
					t.Errorf("%s: next due %s while paused", id, e.NextDueTime())
				}
			}
		})
	}
}

// TestSharedSavings simulates a day of a list where a fifth of the servers
// are listed a second time at the same address, under new ids, with churn,
// failures and new servers: the audit holds (caps,
// S1-S9, one check per address) and the checks are those of the list
// without the second listings, against the same list with each second
// listing at an address of its own on the same host.
func TestSharedSavings(t *testing.T) {
	t.Parallel() // a simulation of its own, on the CPU: alongside the others
	n, d := 3000, 24*time.Hour
	if testing.Short() {
		n, d = 1000, 3*time.Hour // the same saving, 16%; make test runs the day of 3,000
	}
	run := func(distinct bool) (*Audit, int) {
		all := Generate(GenConfig{Servers: n, BigHost: n / 20, Base: t0, Late: 0.02, NoURL: 0.01, Shared: 0.2, Distinct: distinct, Seed: 11})
		s := &Sim{List: EvolvingList(all, t0, d, 0.005, 11), Check: Outcomes(0.1, 11)}
		if err := s.Run(context.Background(), t0, d); err != nil {
			t.Fatal(err)
		}
		s.Audit.Finish(s.Ledger)
		if !s.Audit.OK() {
			var b strings.Builder
			s.Audit.WriteReport(&b)
			t.Fatalf("distinct %v: %s", distinct, b.String())
		}
		return s.Audit, len(all)
	}
	shared, listed := run(false)
	distinct, _ := run(true)
	saved := distinct.checks - shared.checks
	t.Logf("%d listings (%d at an address listed twice), %s: %d checks with one per address, %d with one per listing: %d saved (%.1f%%)",
		listed, listed-n, d, shared.checks, distinct.checks, saved, 100*float64(saved)/float64(distinct.checks))
	// A fifth more listings cost a sixth of the checks when each is
	// checked on its own; the saving is about that, less where the
	// second listing is on a stretched host (its checks were cut anyway).
	if saved <= distinct.checks/12 {
		t.Errorf("saved %d of %d checks, want about a sixth", saved, distinct.checks)
	}
}
