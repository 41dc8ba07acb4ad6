package sim

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/planner"
)

// cloneLedger returns a deep copy of l, through its binary form.
func cloneLedger(tb testing.TB, l *spool.Ledger) *spool.Ledger {
	tb.Helper()
	b, err := l.MarshalBinary()
	if err != nil {
		tb.Fatal(err)
	}
	c := spool.NewLedger()
	if err := c.UnmarshalBinary(b); err != nil {
		tb.Fatal(err)
	}
	return c
}

// TestStatesOfPlansAsStates: a plan that reads only the states it looks at
// (planner.Input.StatesOf, as cmd/plan does) is the plan made from every state
// (planner.Input.States), minute after minute of a simulation with new, removed,
// failing and paused servers, and once most servers have been checked it
// reads far fewer states.
func TestStatesOfPlansAsStates(t *testing.T) {
	t.Parallel() // a simulation of its own, on the CPU: alongside the others
	start := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	d := 3 * time.Hour
	if testing.Short() {
		d = 2 * time.Hour // a first hour of first checks, then the steady one; make test runs 3 h
	}
	sh := shape{seed: 7, bigHost: 0, crowded: []int{130, 200}, singles: 600, late: 0.03, churn: 0.01, failing: 0.2, pausedPct: 0.01}
	all := sh.servers(start)
	sim := &Sim{List: EvolvingList(all, start, d, sh.churn, sh.seed), Paused: sh.pausedAt(all, start), Check: Outcomes(sh.failing, sh.seed)}
	// Servers never checked are looked at every minute: once most have
	// been, in the last hour, a plan reads only a few states.
	steady := start.Add(d - time.Hour)
	minutes, picked, read, listed := 0, 0, 0, 0
	sim.OnMinute = func(rep planner.Report, _ *Audit) error {
		// The next minute, planned both ways from the same ledger.
		now := rep.Minute
		at := now.Add(time.Minute)
		list, paused := sim.List(now), sim.Paused(now)
		p := planner.Planner{Now: func() time.Time { return now }}
		la, lb := cloneLedger(t, sim.Ledger), cloneLedger(t, sim.Ledger)
		want, err := p.Plan(at, planner.Input{Servers: list, Paused: pausedList(paused), States: sim.States}, la)
		if err != nil {
			return err
		}
		got, err := p.Plan(at, planner.Input{Servers: list, Paused: pausedList(paused), StatesOf: func(ids []string) (map[string]data.State, error) {
			m := map[string]data.State{}
			for _, id := range ids {
				if st, ok := sim.States[id]; ok {
					m[id] = st
				}
			}
			if ids == nil {
				m = maps.Clone(sim.States)
			}
			if at.After(steady) {
				if ids != nil {
					picked++
				}
				read += len(m)
			}
			return m, nil
		}}, lb)
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(got, want) {
			return fmt.Errorf("plan of %s from the states looked at differs from the plan from every state:\n%+v\nwant %+v", at, got, want)
		}
		if !lb.Equal(la) {
			return fmt.Errorf("ledger after the plan of %s from the states looked at differs", at)
		}
		if at.After(steady) {
			minutes++
			listed += len(list)
		}
		return nil
	}
	if err := sim.Run(context.Background(), start, d); err != nil {
		t.Fatal(err)
	}
	if minutes == 0 || picked < minutes {
		t.Errorf("only %d plans of %d picked the states to read", picked, minutes)
	}
	if read*10 > listed {
		t.Errorf("plans read %d states for %d listed servers, want under a tenth", read, listed)
	}
	t.Logf("last %d minutes: %d plans picked states, read %d states for %d listed", minutes, picked, read, listed)
}
