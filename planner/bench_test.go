package planner

import (
	"context"
	"testing"
	"time"
)

// BenchmarkSimulate runs the simulation of 100,000 servers into a data
// directory, as `plan -simulate` does, for two hours per iteration.
func BenchmarkSimulate2h100k(b *testing.B) {
	start := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	all := Generate(GenConfig{Servers: 100_000, BigHost: 5000, Base: start, Late: 0.005, NoURL: 0.01, Seed: 1})
	for b.Loop() {
		s := &Sim{Dir: b.TempDir(), List: EvolvingList(all, start, 24*time.Hour, 0.005, 1), Check: SimOutcomes(0.05, 1)}
		if err := s.Run(context.Background(), start, 2*time.Hour); err != nil {
			b.Fatal(err)
		}
	}
}
