package sim

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/planner"
)

// t0 is the first minute every rule test plans.
var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// world is a small scripted simulation for the rule tests.
type world struct {
	list   func(now time.Time) []data.Server
	paused func(now time.Time) map[string]bool
	check  func(c data.PlannedCheck) data.Result // nil: working
	ledger *spool.Ledger
	states map[string]data.State
}

// MustRun runs the world from t0 for d and returns every planned check in
// order and the simulation. The audit must find no broken rule.
func (w world) MustRun(tb testing.TB, d time.Duration) ([]data.PlannedCheck, *Sim) {
	tb.Helper()
	check := w.check
	if check == nil {
		check = func(data.PlannedCheck) data.Result {
			return data.Result{Status: data.Working, Duration: time.Second, Protocol: "2025-11-25", Transport: data.TransportStreamable}
		}
	}
	var all []data.PlannedCheck
	s := &Sim{List: w.list, Paused: w.paused, Check: check, Ledger: w.ledger, States: w.states,
		OnMinute: func(rep planner.Report, _ *Audit) error { all = append(all, rep.Checks...); return nil }}
	if err := s.Run(context.Background(), t0, d); err != nil {
		tb.Fatal(err)
	}
	s.Audit.Finish(s.Ledger)
	if !s.Audit.OK() {
		tb.Errorf("audit: %v\n%v", s.Audit.Broken, s.Audit.Examples)
	}
	return all, s
}

func fixed(servers ...data.Server) func(time.Time) []data.Server {
	lists.SortServers(servers)
	return func(time.Time) []data.Server { return servers }
}

func srv(id string, rank int, host string) data.Server {
	return data.Server{ID: id, Rank: rank, URL: "https://" + host + "/mcp/" + id, Added: t0.Add(-48 * time.Hour)}
}

func of(checks []data.PlannedCheck, id string) []data.PlannedCheck {
	var out []data.PlannedCheck
	for _, c := range checks {
		if c.ID == id {
			out = append(out, c)
		}
	}
	return out
}

func gaps(checks []data.PlannedCheck) []time.Duration {
	var g []time.Duration
	for i := 1; i < len(checks); i++ {
		g = append(g, checks[i].At.Sub(checks[i-1].At))
	}
	return g
}

func reasons(checks []data.PlannedCheck) []string {
	var r []string
	for _, c := range checks {
		r = append(r, c.Reason)
	}
	return r
}

func all[T comparable](v []T, want T) bool {
	for _, x := range v {
		if x != want {
			return false
		}
	}
	return len(v) > 0
}

func TestRules(t *testing.T) {
	t.Parallel() // a simulation of its own, on the CPU: alongside the others
	t.Run("S1_tiers", func(t *testing.T) {
		checks, s := world{list: fixed(srv("top", 2000, "a.example.net"), srv("tail", 2001, "b.example.net"))}.MustRun(t, 50*time.Hour)
		top, tail := of(checks, "top"), of(checks, "tail")
		if len(top) < 49 || !all(gaps(top), time.Hour) {
			t.Errorf("rank 2000: %d checks, gaps %v; want hourly", len(top), gaps(top))
		}
		if len(tail) != 2 && len(tail) != 3 || !all(gaps(tail), 24*time.Hour) {
			t.Errorf("rank 2001: %d checks, gaps %v; want daily", len(tail), gaps(tail))
		}
		if e, _ := s.Ledger.Lookup("top"); e.EffectiveCadence() != data.HourlyCadence {
			t.Errorf("ledger cadence of rank 2000 = %v", e.EffectiveCadence())
		}
		if e, _ := s.Ledger.Lookup("tail"); e.EffectiveCadence() != data.DailyCadence {
			t.Errorf("ledger cadence of rank 2001 = %v", e.EffectiveCadence())
		}
	})

	t.Run("S2_fixed_slot", func(t *testing.T) {
		// Ranked 1 for five hours, then 5000: the cadence moves, the minute does not.
		ids := []string{"alpha", "beta", "gamma", "delta"}
		list := func(now time.Time) []data.Server {
			rank := 1
			if now.Sub(t0) >= 5*time.Hour {
				rank = 5000
			}
			var out []data.Server
			for i, id := range ids {
				out = append(out, srv(id, rank+i, id+".example.net"))
			}
			return out
		}
		checks, _ := world{list: list}.MustRun(t, 30*time.Hour)
		for _, id := range ids {
			slot := planner.SlotOf(id)
			cs := of(checks, id)
			if len(cs) < 5 {
				t.Fatalf("%s: %d checks", id, len(cs))
			}
			for _, c := range cs {
				if got := time.Duration(c.At.Unix()%3600) * time.Second; got != slot%time.Hour {
					t.Errorf("%s checked at %s, not at its minute and second %v past the hour", id, c.At.Format(time.RFC3339), slot%time.Hour)
				}
			}
			if late := cs[len(cs)-1]; late.At.Sub(t0) > 5*time.Hour && time.Duration(late.At.Unix()%86400)*time.Second != slot {
				t.Errorf("%s daily check at %s, not at its second of the day %v", id, late.At.Format(time.RFC3339), slot)
			}
		}
	})

	t.Run("S3_host_caps", func(t *testing.T) {
		var servers []data.Server
		for i := range 400 { // 400 hourly servers on one host: more than 120 an hour
			servers = append(servers, srv(fmt.Sprintf("h%03d", i), i+1, "busy.example.net"))
		}
		checks, _ := world{list: fixed(servers...)}.MustRun(t, 4*time.Hour)
		var starts []int64
		for _, c := range checks {
			starts = append(starts, c.At.Unix())
		}
		slices.Sort(starts)
		for i, x := range starts {
			if i > 0 && x == starts[i-1] {
				t.Fatalf("two checks of one host at %d", x)
			}
			n := 0
			for _, y := range starts[i:] {
				if y-x < 3600 {
					n++
				}
			}
			if n > data.HostMaxPerHour {
				t.Fatalf("%d checks in the hour from %d", n, x)
			}
		}
		if len(checks) < 4*planner.RoutineShare*9/10 {
			t.Errorf("only %d checks in 4 h: the host's share is not used", len(checks))
		}
	})

	t.Run("S3_day_cap", func(t *testing.T) {
		// 2,999 starts in the last 24 h (none in the last hour): room for one more.
		l := spool.NewLedger()
		l.Created, l.LastMinute = t0.Add(-48*time.Hour).Unix(), t0.Add(-time.Hour).Unix()
		for i := range 2999 {
			l.Hosts["full.example.net"] = append(l.Hosts["full.example.net"], spool.MakeHostStart(t0.Unix()-86000+int64(i)*24, false))
		}
		p := planner.Planner{Now: func() time.Time { return t0.Add(-time.Minute) }}
		list := []data.Server{srv("n1", 10, "full.example.net"), srv("n2", 11, "full.example.net"), srv("other", 12, "other.example.net")}
		rep, err := p.Plan(t0, planner.Input{Servers: list}, l)
		if err != nil {
			t.Fatal(err)
		}
		if got := reasons(rep.Checks); len(rep.Checks) != 2 || rep.Checks[0].ID != "n1" || rep.Checks[1].ID != "other" || rep.Deferred != 1 {
			t.Errorf("planned %v %v, deferred %d; want n1 and other, n2 deferred", rep.Checks, got, rep.Deferred)
		}
	})

	t.Run("S4_priority", func(t *testing.T) {
		// Everything owed in one minute on one host: placed one second
		// apart in the order new, retry, routine by how overdue, rank.
		minute := t0
		l, list, states := owedWorld(minute, 0)
		p := planner.Planner{Now: func() time.Time { return minute.Add(-time.Minute) }}
		rep, err := p.Plan(minute, planner.Input{Servers: list, States: states}, l)
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, c := range rep.Checks {
			order = append(order, c.ID+"/"+c.Reason)
		}
		if want := owedOrder(minute); !slices.Equal(order, want) {
			t.Errorf("order %v, want %v", order, want)
		}
	})

	t.Run("S4_deferral_keeps_claim", func(t *testing.T) {
		// 110 starts over the last hour, one every 30 s: routine checks
		// fit one every 30 s. The rest wait, most overdue first, and a
		// waiting check keeps its due time.
		minute := t0
		l, list, states := owedWorld(minute, 110)
		dues := map[string]time.Time{}
		var got []data.PlannedCheck
		running := map[int64]bool{} // the runs of the minutes planned are going: nothing is lost
		for m := range 4 {
			minute = t0.Add(time.Duration(m) * time.Minute)
			running[minute.Unix()] = true
			p := planner.Planner{Now: func() time.Time { return minute.Add(-time.Minute) }}
			rep, err := p.Plan(minute, planner.Input{Servers: list, States: states, Running: running}, l)
			if err != nil {
				t.Fatal(err)
			}
			if m == 0 && rep.Deferred == 0 {
				t.Error("nothing deferred in the first minute")
			}
			for _, c := range rep.Checks {
				if d, ok := dues[c.ID]; ok && !d.Equal(c.Due) {
					t.Errorf("%s due %s while waiting, %s when planned: its claim moved", c.ID, d, c.Due)
				}
			}
			got = append(got, rep.Checks...)
			for _, e := range l.Servers {
				if e.Planned < t0.Unix() {
					dues[e.ID] = e.NextDueTime()
				}
			}
		}
		// New and retry may use the top of the cap that routine leaves
		// them (planner.NewReserve); routine checks then come one every 30 s.
		var order []string
		for i, c := range got {
			order = append(order, c.ID+"/"+c.Reason)
			if i > 2 && c.At.Sub(got[i-1].At) != 30*time.Second {
				t.Errorf("routine checks at %s and %s: want one every 30 s", got[i-1].At, c.At)
			}
		}
		if want := owedOrder(t0); len(order) < 6 || !slices.Equal(order[:6], want[:6]) {
			t.Errorf("order %v, want %v", order, want)
		}
	})

	t.Run("S4_fair_sharing", func(t *testing.T) {
		t.Parallel() // 11 simulated hours, the longest case: alongside the others
		var servers []data.Server
		for i := range 300 {
			servers = append(servers, srv(fmt.Sprintf("hour%03d", i), i+1, "crowded.example.net"))
		}
		for i := range 1000 {
			servers = append(servers, srv(fmt.Sprintf("day%04d", i), 3000+i, "crowded.example.net"))
		}
		checks, s := world{list: fixed(servers...)}.MustRun(t, 11*time.Hour)
		// 300×24+1000 checks a day wanted, planner.RoutineShare an hour allowed:
		// stretched by 28/8, each hourly server every 3.5 h.
		want := 3 * time.Hour / 2 * 7 / 3
		counts := map[string]int{}
		for _, c := range checks {
			counts[c.ID]++
			if c.Every != int64(want/time.Second) && c.Rank <= data.HourlyTierMaxRank {
				t.Fatalf("%s planned without its stretched cadence: every %d s, want %v", c.ID, c.Every, want)
			}
		}
		lo, hi := 1<<30, 0
		for _, sv := range servers[:300] {
			lo, hi = min(lo, counts[sv.ID]), max(hi, counts[sv.ID])
			if e, _ := s.Ledger.Lookup(sv.ID); e.EffectiveCadence() != want {
				t.Fatalf("%s: ledger cadence %v, want %v", sv.ID, e.EffectiveCadence(), want)
			}
		}
		if lo < 3 || hi > 4 {
			t.Errorf("hourly servers of the crowded host checked %d to %d times in 11 h; want 3 or 4 each", lo, hi)
		}
	})

	t.Run("S5_new_servers", func(t *testing.T) {
		base := []data.Server{srv("old", 50, "h.example.net")}
		var late []data.Server
		for i := range 6 {
			late = append(late, srv(fmt.Sprintf("new%d", i), 60+i, "h.example.net"))
		}
		late = append(late, srv("alone", 70, "solo.example.net"))
		added := t0.Add(30 * time.Minute)
		list := func(now time.Time) []data.Server {
			if now.Before(added) {
				return base
			}
			out := append(slices.Clone(base), late...)
			lists.SortServers(out)
			return out
		}
		checks, _ := world{list: list}.MustRun(t, 2*time.Hour)
		firstPlan := added.Add(time.Minute) // the first plan made at or after added plans this minute
		var sameHost []time.Time
		for _, s := range late {
			cs := of(checks, s.ID)
			if len(cs) == 0 || cs[0].Reason != data.ReasonNew {
				t.Fatalf("%s: first check %v, want a new one", s.ID, cs)
			}
			if d := cs[0].At.Sub(firstPlan); d < 0 || d > data.NewServerTarget {
				t.Errorf("%s first checked %v after the first plan that saw it", s.ID, d)
			}
			if s.ID == "alone" && !cs[0].At.Equal(firstPlan) {
				t.Errorf("alone on its host: first checked at %s, want %s", cs[0].At, firstPlan)
			}
			if s.ID != "alone" {
				sameHost = append(sameHost, cs[0].At)
			}
		}
		slices.SortFunc(sameHost, time.Time.Compare)
		for i := 1; i < len(sameHost); i++ {
			if d := sameHost[i].Sub(sameHost[i-1]); d != data.NewServerSpacing {
				t.Errorf("new servers of one host %v apart, want %v", d, data.NewServerSpacing)
			}
		}
	})

	t.Run("S5_url_change_is_new", func(t *testing.T) {
		moved := t0.Add(2 * time.Hour)
		list := func(now time.Time) []data.Server {
			s := srv("mover", 5, "a.example.net")
			if !now.Before(moved) {
				s.URL = "https://b.example.net/mcp"
			}
			return []data.Server{s}
		}
		checks, _ := world{list: list}.MustRun(t, 3*time.Hour)
		var after []data.PlannedCheck
		for _, c := range checks {
			if c.URL == "https://b.example.net/mcp" {
				after = append(after, c)
			} else if !c.At.Before(moved.Add(time.Minute)) {
				t.Errorf("old address checked at %s after the move", c.At)
			}
		}
		if len(after) == 0 || after[0].Reason != data.ReasonNew || after[0].At.Sub(moved) > data.NewServerTarget+time.Minute {
			t.Errorf("after the move: %v; want a new check within minutes", after)
		}
	})

	t.Run("S6_retry_failing_that_answered", func(t *testing.T) {
		var failFrom time.Time
		check := func(c data.PlannedCheck) data.Result {
			if failFrom.IsZero() {
				failFrom = c.At.Add(time.Minute) // the first check answers, every later one fails
				return data.Result{Status: data.Working, Duration: time.Second}
			}
			return data.Result{Status: data.Failing, Detail: "HTTP 502", Duration: time.Second}
		}
		checks, _ := world{list: fixed(srv("flaky", 1, "f.example.net")), check: check}.MustRun(t, 5*time.Hour)
		// working, failing (routine), 11 retries 5 min apart, then hourly again.
		want := []string{data.ReasonRoutine, data.ReasonRoutine}
		for range 11 {
			want = append(want, data.ReasonRetry)
		}
		want = append(want, data.ReasonRoutine, data.ReasonRoutine)
		got := reasons(checks)
		if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
			t.Fatalf("reasons %v, want %v then routine", got, want)
		}
		g := gaps(checks)
		for i := 1; i < 12; i++ {
			if g[i] != data.RetryAfterFailure {
				t.Errorf("retry %d came %v after the check before, want %v", i, g[i], data.RetryAfterFailure)
			}
		}
		if streak := checks[12].At.Sub(checks[1].At); streak >= data.RetryWindow {
			t.Errorf("last retry %v into the streak, want within %v", streak, data.RetryWindow)
		}
		// The last retry is 55 min into the streak; its slot comes 5 min later.
		if g[12] != data.RetryAfterFailure || !all(g[13:], time.Hour) || slices.Contains(got[13:], data.ReasonRetry) {
			t.Errorf("after the first hour of failing: gaps %v, reasons %v; want its slot, then the usual pace", g[12:], got[13:])
		}
	})

	t.Run("S7_never_answered_waits", func(t *testing.T) {
		check := func(c data.PlannedCheck) data.Result {
			return data.Result{Status: data.Failing, Detail: "connection refused", Duration: time.Second}
		}
		checks, _ := world{list: fixed(srv("dead", 1, "d.example.net")), check: check}.MustRun(t, 5*time.Hour)
		if len(checks) < 4 || !all(reasons(checks), data.ReasonRoutine) || !all(gaps(checks), time.Hour) {
			t.Errorf("never answered: reasons %v gaps %v; want routine, hourly", reasons(checks), gaps(checks))
		}
	})

	t.Run("S8_paused", func(t *testing.T) {
		until := t0.Add(3 * time.Hour)
		paused := func(now time.Time) map[string]bool {
			if now.Before(until) {
				return map[string]bool{"quiet": true}
			}
			return nil
		}
		checks, _ := world{list: fixed(srv("quiet", 1, "q.example.net"), srv("loud", 2, "q.example.net")), paused: paused}.MustRun(t, 5*time.Hour)
		for _, c := range of(checks, "quiet") {
			if c.At.Before(until) {
				t.Errorf("paused server checked at %s", c.At)
			}
		}
		if len(of(checks, "quiet")) == 0 || len(of(checks, "loud")) < 4 {
			t.Errorf("quiet %d checks, loud %d: want quiet back after the pause, loud hourly", len(of(checks, "quiet")), len(of(checks, "loud")))
		}
	})

	t.Run("S9_whole_seconds_never_past", func(t *testing.T) {
		l := spool.NewLedger()
		list := []data.Server{srv("a", 1, "a.example.net"), srv("b", 2, "b.example.net")}
		p := planner.Planner{Now: func() time.Time { return t0 }}
		if _, err := p.Plan(t0, planner.Input{Servers: list}, l); !errors.Is(err, planner.ErrPast) {
			t.Errorf("planning the minute that has begun: %v, want planner.ErrPast", err)
		}
		if _, err := p.Plan(t0.Add(90*time.Second), planner.Input{Servers: list}, l); err == nil {
			t.Error("planning half a minute: no error")
		}
		if l.LastMinute != 0 || len(l.Servers) != 0 {
			t.Errorf("a refused plan changed the ledger: %+v", l)
		}
		for m := 1; m <= 120; m++ {
			minute := t0.Add(time.Duration(m) * time.Minute)
			p.Now = func() time.Time { return minute.Add(-time.Second) }
			rep, err := p.Plan(minute, planner.Input{Servers: list}, l)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range rep.Checks {
				if c.At.Before(minute) || !c.At.Before(minute.Add(time.Minute)) || c.At.Nanosecond() != 0 || c.At.Before(c.Due) {
					t.Errorf("check at %s due %s in the plan of %s", c.At, c.Due, minute)
				}
			}
		}
	})

	t.Run("RetryAfter_honoured_capped", func(t *testing.T) {
		n := 0
		check := func(c data.PlannedCheck) data.Result {
			n++
			switch {
			case c.ID == "slow" && n > 0:
				// Answered once, then 503 with Retry-After 20 min: failing,
				// but not retried before then.
				if c.Reason == data.ReasonRoutine && c.At.Sub(t0) < time.Hour {
					return data.Result{Status: data.Working, Duration: time.Second}
				}
				return data.Result{Status: data.Failing, HTTPStatus: 503, RetryAfter: c.At.Add(20 * time.Minute), Duration: time.Second}
			default: // a week: capped at the usual pace
				return data.Result{Status: data.Refused, HTTPStatus: 429, RetryAfter: c.At.Add(7 * 24 * time.Hour), Duration: time.Second}
			}
		}
		checks, _ := world{list: fixed(srv("slow", 1, "s.example.net"), srv("busy", 2, "b.example.net")), check: check}.MustRun(t, 4*time.Hour)
		slow := of(checks, "slow")
		for i, g := range gaps(slow) {
			if g < 20*time.Minute {
				t.Errorf("slow: check %d came %v after the one before, within its Retry-After", i+1, g)
			}
		}
		if !slices.Contains(reasons(slow), data.ReasonRetry) {
			t.Errorf("slow: reasons %v, want a retry after Retry-After", reasons(slow))
		}
		if busy := of(checks, "busy"); len(busy) < 4 || !all(gaps(busy), time.Hour) {
			t.Errorf("busy: gaps %v; a Retry-After of a week is capped at the hourly pace", gaps(busy))
		}
	})

	t.Run("removed_not_planned", func(t *testing.T) {
		gone := t0.Add(90 * time.Minute)
		list := func(now time.Time) []data.Server {
			if now.Before(gone) {
				return []data.Server{srv("stay", 1, "a.example.net"), srv("leave", 2, "a.example.net")}
			}
			return []data.Server{srv("stay", 1, "a.example.net")}
		}
		checks, s := world{list: list}.MustRun(t, 4*time.Hour)
		for _, c := range of(checks, "leave") {
			if !c.At.Before(gone.Add(time.Minute)) {
				t.Errorf("removed server planned at %s", c.At)
			}
		}
		if len(of(checks, "leave")) == 0 {
			t.Error("leave never checked before it was removed")
		}
		if _, ok := s.Ledger.Lookup("leave"); ok {
			t.Error("removed server still in the ledger")
		}
	})

	t.Run("same_minute_twice_same_plan", func(t *testing.T) {
		// After 2 simulated hours of 3,000 servers; -short's world is an
		// hour of 1,000, a sixth of the cost, where the same holds.
		servers, before := 3000, 2*time.Hour
		if testing.Short() {
			servers, before = 1000, time.Hour
		}
		all := Generate(GenConfig{Servers: servers, BigHost: 400, Base: t0, Late: 0.02, Shared: 0.2, Seed: 7})
		list := EvolvingList(all, t0, 3*time.Hour, 0.01, 7)
		s := &Sim{List: list, Check: Outcomes(0.1, 7)}
		if err := s.Run(context.Background(), t0, before); err != nil {
			t.Fatal(err)
		}
		next := t0.Add(before)
		now := next.Add(-time.Minute)
		p := planner.Planner{Now: func() time.Time { return now }}
		in := planner.Input{Servers: list(now), States: s.States}
		first, err := p.Plan(next, in, s.Ledger)
		if err != nil {
			t.Fatal(err)
		}
		b1, _ := s.Ledger.MarshalBinary()
		afterFirst := spool.NewLedger()
		if err := afterFirst.UnmarshalBinary(b1); err != nil {
			t.Fatal(err)
		}
		second, err := p.Plan(next, in, s.Ledger)
		if err != nil {
			t.Fatal(err)
		}
		if len(first.Checks) == 0 || !slices.EqualFunc(first.Checks, second.Checks, func(a, b data.PlannedCheck) bool { return reflect.DeepEqual(a, b) }) {
			t.Errorf("same minute planned twice: %d then %d checks, differing", len(first.Checks), len(second.Checks))
		}
		if !s.Ledger.Equal(afterFirst) {
			t.Error("planning the same minute again changed the ledger: counted twice")
		}
		if _, err := p.Plan(next.Add(-time.Minute), in, s.Ledger); !errors.Is(err, planner.ErrPlannedAfter) && !errors.Is(err, planner.ErrPast) {
			t.Errorf("planning an earlier minute: %v, want planner.ErrPlannedAfter", err)
		}
		now = next.Add(-10 * time.Minute) // a clock that allows it: still refused
		if _, err := p.Plan(next.Add(-time.Minute), in, s.Ledger); !errors.Is(err, planner.ErrPlannedAfter) {
			t.Errorf("planning an earlier minute: %v, want planner.ErrPlannedAfter", err)
		}
	})
}

// owedWorld returns a ledger, list and states where, at minute, one host
// owes a new check, a retry and four routine checks (r1-r3 equally ranked
// and overdue by their slots, r4 ranked lower), after busy starts one every
// 30 s over the hour before.
func owedWorld(minute time.Time, busy int) (*spool.Ledger, []data.Server, map[string]data.State) {
	const host = "h.example.net"
	l := spool.NewLedger()
	l.Created, l.LastMinute = minute.Add(-48*time.Hour).Unix(), minute.Add(-time.Minute).Unix()
	for k := range busy {
		l.Hosts[host] = append(l.Hosts[host], spool.MakeHostStart(minute.Unix()-3600+int64(k)*30, false))
	}
	retry := srv("retry", 3, host)
	states := map[string]data.State{"retry": {ID: "retry", URL: retry.URL, LastCheck: minute.Add(-5 * time.Minute),
		LastStatus: data.Failing, LastAnswered: minute.Add(-65 * time.Minute), FailingSince: minute.Add(-10 * time.Minute)}}
	list := []data.Server{retry, srv("fresh", 9, host)}
	for _, r := range []struct {
		id   string
		rank int
	}{{"r1", 4}, {"r2", 4}, {"r3", 4}, {"r4", 5}} {
		s := srv(r.id, r.rank, host)
		last := minute.Add(-3 * time.Hour)
		states[r.id] = data.State{ID: r.id, URL: s.URL, LastCheck: last, LastStatus: data.Working, LastAnswered: last}
		list = append(list, s)
	}
	lists.SortServers(list)
	for _, s := range list {
		if s.ID != "fresh" {
			l.Servers = append(l.Servers, spool.LedgerServer{ID: s.ID, Rank: int32(s.Rank), URLHash: spool.URLHash(s.URL),
				FirstSeen: l.Created, Planned: states[s.ID].LastCheck.Unix(), Reason: spool.CodeRoutine})
		}
	}
	return l, list, states
}

// owedOrder is the order rule S4 gives the checks of owedWorld.
func owedOrder(minute time.Time) []string {
	due := func(id string, rank int) int64 {
		// its first slot (rule S2) after the retry gap that followed its last check
		tier, slot := int64(data.Tier(rank)/time.Second), int64(planner.SlotOf(id)/time.Second)
		from := minute.Add(-3*time.Hour + data.RetryAfterFailure).Unix()
		return from + ((slot-from)%tier+tier)%tier
	}
	routine := []string{"r1", "r2", "r3", "r4"}
	rank := map[string]int{"r1": 4, "r2": 4, "r3": 4, "r4": 5}
	slices.SortFunc(routine, func(a, b string) int {
		return cmp2(due(a, rank[a]), due(b, rank[b]), fmt.Sprint(rank[a], a), fmt.Sprint(rank[b], b))
	})
	order := []string{"fresh/new", "retry/retry"}
	for _, id := range routine {
		order = append(order, id+"/routine")
	}
	return order
}

func cmp2(a, b int64, x, y string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
