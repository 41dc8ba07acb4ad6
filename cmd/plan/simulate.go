package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"plug.directory/prober/cmd/internal/cli"
	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/pause"
	"plug.directory/prober/planner"
	"plug.directory/prober/planner/sim"
)

// simConfig is what plan simulate does: the real planner minute by minute
// over a virtual clock, into an empty data directory.
type simConfig struct {
	Config                 // Servers, Paused (a local file), Data, At (the first minute; zero: the next)
	Simulate time.Duration // how long to simulate
	Failing  float64       // share of servers failing
	Churn    float64       // share of servers removed, and another share moved, during the simulation
	Seed     uint64        // of the outcomes
}

// Validate reports everything missing or out of range in c.
func (c simConfig) Validate() error {
	var errs []error
	if c.Simulate <= 0 || c.Simulate%time.Minute != 0 {
		errs = append(errs, fmt.Errorf("-simulate %s: want a positive whole number of minutes", c.Simulate))
	}
	if pause.IsSpec(c.Paused) {
		errs = append(errs, errors.New("-simulate takes a local -paused FILE"))
	}
	if c.Failing < 0 || c.Failing > 0.5 {
		errs = append(errs, fmt.Errorf("-failing %g: want a share between 0 and 0.5", c.Failing))
	}
	if c.Churn < 0 || c.Churn > 0.25 {
		errs = append(errs, fmt.Errorf("-churn %g: want a share between 0 and 0.25", c.Churn))
	}
	return errors.Join(append(errs, c.Config.Validate())...)
}

// runSimulate is plan simulate D (plan -simulate D).
func runSimulate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plan simulate", flag.ContinueOnError)
	var cfg simConfig
	var verbose bool
	fs.DurationVar(&cfg.Simulate, "simulate", 0, "simulate this long (e.g. 24h) into an empty -data DIR and audit every rule")
	fs.StringVar(&cfg.Servers, "servers", "", "ranked list `FILE` (CSV: id,rank,url,added)")
	fs.StringVar(&cfg.Paused, "paused", "", "paused list `FILE` (one id or address a line)")
	fs.StringVar(&cfg.Data, "data", "", "an empty data `DIR` for the plans, ledger and results")
	cli.TimeVar(fs, &cfg.At, "at", "the first `minute` (default the next whole minute): "+cli.TimeForms)
	fs.Float64Var(&cfg.Failing, "failing", 0.05, "share of servers that fail")
	fs.Float64Var(&cfg.Churn, "churn", 0.005, "share of servers removed, and another share moved to a new address")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the simulated outcomes")
	fs.BoolVar(&verbose, "v", false, "log each step")
	usage := "usage: plan simulate 24h -servers FILE -data DIR [-paused FILE] [-at TIME] [-failing 0.05] [-churn 0.005] [-seed N]" +
		"\n       (plan -simulate 24h ... is the same)"
	if err := cli.ParseMode(fs, args, stdout, stderr, usage, func() error { return cfg.Validate() }); err != nil {
		return err
	}
	return simulate(ctx, cfg, stdout, cli.Logger(stderr, slog.LevelWarn, slog.LevelInfo, verbose))
}

// simulate runs the real planner minute by minute over a virtual clock into
// an empty data directory, writing plans, ledger and results as cmd/plan and
// the runner do, and prints the audit. It fails when a rule is broken.
func simulate(ctx context.Context, cfg simConfig, stdout io.Writer, logger *slog.Logger) error {
	if _, err := os.Stat(data.Dir(cfg.Data).Ledger()); err == nil {
		return fmt.Errorf("simulate: %s already holds a ledger: simulate into an empty data directory", cfg.Data)
	}
	all, err := planner.ReadServers(cfg.Servers, lists.ListGuard{}, cfg.clock().Time(), logger)
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
