package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"plug.directory/prober/pause"
	"plug.directory/prober/planner"
)

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
