package sim

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/planner"
)

// cpuTime returns the CPU time the process has used, user and system: on a
// shared machine a steadier measure than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds the CPU time per operation to a benchmark's figures.
func reportCPU(b *testing.B, since time.Duration) {
	b.ReportMetric(float64((cpuTime()-since).Milliseconds())/float64(b.N), "cpu-ms/op")
}

// BenchmarkPlan plans one minute in memory (no files) in steady state: every
// server was checked at its last slot and has a ledger record. It is the planner's own share of
// cmd/plan's BenchmarkPlanMinute.
func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
			servers := Generate(GenConfig{Servers: n, BigHost: n / 20, Base: start.Add(-24 * time.Hour), Seed: 3})
			states := make(map[string]data.State, n)
			for _, s := range servers {
				at := planner.LastSlot(s, start)
				states[s.ID] = data.State{ID: s.ID, URL: s.URL, LastCheck: at, LastStatus: data.Working, LastAnswered: at}
			}
			l := spool.NewLedger()
			minute := start
			p := planner.Planner{Now: func() time.Time { return minute.Add(-time.Minute) }}
			if _, err := p.Plan(minute, planner.Input{Servers: servers, States: states}, l); err != nil {
				b.Fatal(err)
			}
			cpu := cpuTime()
			for b.Loop() {
				minute = minute.Add(time.Minute)
				if _, err := p.Plan(minute, planner.Input{Servers: servers, States: states}, l); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkSimulateDay simulates a day of 100,000 servers into a data
// directory, as `plan -simulate 24h` does (goal: 5 minutes), and fails if
// the audit finds a broken rule.
func BenchmarkSimulateDay(b *testing.B) {
	start := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	all := Generate(GenConfig{Servers: 100_000, BigHost: 5000, Base: start, Late: 0.005, NoURL: 0.01, Seed: 1})
	cpu := cpuTime()
	for b.Loop() {
		s := &Sim{Dir: b.TempDir(), List: EvolvingList(all, start, 24*time.Hour, 0.005, 1), Check: Outcomes(0.05, 1)}
		if err := s.Run(context.Background(), start, 24*time.Hour); err != nil {
			b.Fatal(err)
		}
		s.Audit.Finish(s.Ledger)
		if !s.Audit.OK() {
			b.Fatalf("rules broken: %v %v", s.Audit.Broken, s.Audit.Examples)
		}
	}
	reportCPU(b, cpu)
}
