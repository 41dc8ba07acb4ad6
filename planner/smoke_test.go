package planner

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestSmokeSim(t *testing.T) {
	start := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	all := Generate(GenConfig{Servers: 5000, BigHost: 600, Base: start, Late: 0.01, NoURL: 0.01, Seed: 1})
	s := &Sim{List: EvolvingList(all, start, 24*time.Hour, 0.005, 1), Check: SimOutcomes(0.05, 1)}
	if err := s.Run(context.Background(), start, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	s.Audit.Finish(s.Ledger)
	s.Audit.WriteReport(os.Stdout)
}
