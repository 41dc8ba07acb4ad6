package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"plug.directory/prober/cmd/internal/cli"
	"plug.directory/prober/pause"
	"plug.directory/prober/planner"
)

// Config is what planning one minute does.
type Config struct {
	Servers string    // ranked list CSV
	Paused  string    // paused list: a file, or github:OWNER/REPO/PATH[@REF]; "" for none
	Data    string    // data directory
	At      time.Time // minute to plan (or, simulating, the first); zero: the next whole minute

	AcceptShrink bool // take a ranked list that lost more than lists.DefaultMaxShrink of the last good one's servers

	GitHubAPI string // GitHub REST API URL a github: paused list is read from; "" means api.github.com

	FirstCheckSoon bool // servers listed at the first plan: first checked as soon as the host caps allow, not at their slot

	Now func() time.Time // nil means time.Now
}

// Validate reports everything missing or contradictory in c, each problem
// on its own (errors.Join).
func (c Config) Validate() error {
	var errs []error
	if c.Servers == "" {
		errs = append(errs, errors.New("-servers FILE is required"))
	}
	if c.Data == "" {
		errs = append(errs, errors.New("-data DIR is required"))
	}
	if !c.At.IsZero() && !c.At.Equal(c.At.Truncate(time.Minute)) {
		errs = append(errs, fmt.Errorf("-at %s: not a whole minute", c.At.Format(time.RFC3339Nano)))
	}
	return errors.Join(errs...)
}

// runPlanMinute is plan without a mode's name: the plan of one minute.
func runPlanMinute(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	var cfg Config
	var verbose bool
	fs.StringVar(&cfg.Servers, "servers", "", "ranked list `FILE` (CSV: id,rank,url,added)")
	fs.StringVar(&cfg.Paused, "paused", "", "paused list `FILE` (one id or address a line), or github:OWNER/REPO/PATH[@REF]")
	fs.StringVar(&cfg.GitHubAPI, "github-api", "", "GitHub REST API `URL` for a github: paused list (default https://api.github.com/)")
	fs.StringVar(&cfg.Data, "data", "", "data `DIR`: plans, ledger, results")
	fs.BoolVar(&cfg.AcceptShrink, "accept-shrink", false, "take the ranked list although it lost more than 5% of the last good list's servers")
	cli.TimeVar(fs, &cfg.At, "at", "`minute` to plan (default the next whole minute): "+cli.TimeForms)
	fs.BoolVar(&cfg.FirstCheckSoon, "first-check-soon", false, "check the servers listed at the first plan, never checked, as soon as the host caps allow rather than at their slot (a fresh deployment)")
	fs.BoolVar(&verbose, "v", false, "log each step")
	usage := "usage: plan -servers FILE [-paused FILE|github:OWNER/REPO/PATH[@REF]] -data DIR [-at MINUTE] [-first-check-soon] [-accept-shrink] [-github-api URL] [-v]" +
		"\n       (the other modes: plan simulate -h, plan generate -h, plan rebuild-state -h)"
	if err := cli.ParseMode(fs, args, stdout, stderr, usage, func() error { return cfg.Validate() }); err != nil {
		return err
	}
	return planMinute(ctx, cfg, stdout, cli.Logger(stderr, slog.LevelWarn, slog.LevelInfo, verbose))
}

// plannerConfig is what planner.PlanMinute takes for cfg: a github: paused
// list is fetched into the data directory first (pause.ListSource).
func plannerConfig(cfg Config, logger *slog.Logger) (planner.Config, error) {
	paused, fetch, err := pause.ListSource(cfg.Paused, cfg.GitHubAPI, cfg.Data, logger, cfg.Now)
	return planner.Config{Servers: cfg.Servers, Paused: paused, FetchPaused: fetch, Data: cfg.Data, Minute: cfg.At,
		FirstCheckSoon: cfg.FirstCheckSoon, AcceptShrink: cfg.AcceptShrink, Now: cfg.Now, Logger: logger}, err
}

// planMinute plans one minute (planner.PlanMinute) and prints what it did.
func planMinute(ctx context.Context, cfg Config, stdout io.Writer, logger *slog.Logger) error {
	pc, err := plannerConfig(cfg, logger)
	if err != nil {
		return err
	}
	sum, err := planner.PlanMinute(ctx, pc)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, sum)
	return nil
}
