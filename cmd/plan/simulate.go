package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/planner"
	"plug.directory/prober/planner/sim"
)

// simulate runs the real planner minute by minute over a virtual clock into
// an empty data directory, writing plans, ledger and results as cmd/plan and
// the runner do, and prints the audit. It fails when a rule is broken.
func simulate(ctx context.Context, cfg Config, stdout io.Writer, logger *slog.Logger) error {
	if _, err := os.Stat(data.LedgerPath(cfg.Data)); err == nil {
		return fmt.Errorf("simulate: %s already holds a ledger: simulate into an empty data directory", cfg.Data)
	}
	all, err := planner.ReadServers(cfg.Servers, data.ListGuard{}, logger)
	if err != nil {
		return err
	}
	pausedList, err := planner.ReadPaused(cfg.Data, cfg.Paused, false, logger)
	if err != nil {
		return err
	}
	start := cfg.clock().NextMinute()
	list := sim.EvolvingList(all, start, cfg.Simulate, cfg.Churn, cfg.Seed)
	var lastList []data.Server
	var paused map[string]bool
	run := &sim.Sim{
		Dir:   cfg.Data,
		List:  list,
		Check: sim.Outcomes(cfg.Failing, cfg.Seed),
		Paused: func(now time.Time) map[string]bool {
			if l := list(now); paused == nil || len(l) != len(lastList) || len(l) > 0 && &l[0] != &lastList[0] {
				lastList, paused = l, planner.PausedIDs(pausedList, l, logger)
			}
			return paused
		},
		Logger: logger,
	}
	began := time.Now()
	fmt.Fprintf(stdout, "simulating %s from %s: %d servers in %s, failing %g, churn %g\n",
		cfg.Simulate, start.Format(time.RFC3339), len(all), cfg.Servers, cfg.Failing, cfg.Churn)
	if err := run.Run(ctx, start, cfg.Simulate); err != nil {
		return err
	}
	run.Audit.Finish(run.Ledger)
	fmt.Fprintln(stdout)
	run.Audit.WriteReport(stdout)
	fmt.Fprintf(stdout, "\nsimulated in %s; plans, ledger and results in %s\n", time.Since(began).Round(time.Millisecond), cfg.Data)
	if !run.Audit.OK() {
		var rules []string
		for r, n := range run.Audit.Broken {
			rules = append(rules, fmt.Sprintf("%s (%d)", r, n))
		}
		slices.Sort(rules)
		return fmt.Errorf("simulate: rules broken: %s", strings.Join(rules, ", "))
	}
	return nil
}
