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
	"plug.directory/prober/data/lists"
	"plug.directory/prober/metrics"
	"plug.directory/prober/pause"
	"plug.directory/prober/planner"
	"plug.directory/prober/runner"
	"plug.directory/prober/site"
)

// loopConfig is what `run loop` does: plan, run and publish every minute
// in the foreground until SIGTERM.
type loopConfig struct {
	checksConfig
	Servers        string // ranked list, for plan and publish
	Paused         string // paused list
	Out            string // where publish writes the site
	PublishMetrics string // after each publish, write its metrics to this file; "" for none
	FirstCheckSoon bool   // servers listed at the first plan first checked as soon as the caps allow (plan -first-check-soon)
}

// Validate reports everything missing in c.
func (c loopConfig) Validate() error {
	var errs []error
	if c.Servers == "" || c.Out == "" {
		errs = append(errs, errors.New("-loop needs -servers FILE and -out DIR for plan and publish"))
	}
	return errors.Join(append(errs, c.checksConfig.Validate())...)
}

// runLoop is `run loop` (and `run -loop` without a mode's name).
func runLoop(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run loop", flag.ContinueOnError)
	var cfg loopConfig
	cfg.register(fs)
	fs.Bool("loop", true, "this mode (run loop), as its flag: kept for the command lines that pick it so")
	fs.StringVar(&cfg.Servers, "servers", "", "ranked list `FILE` for plan and publish")
	fs.StringVar(&cfg.Paused, "paused", "", "paused list `FILE` (or what plan -paused takes)")
	fs.StringVar(&cfg.Out, "out", "", "`DIR` where publish writes the site")
	fs.StringVar(&cfg.PublishMetrics, "publish-metrics", "", "after each publish, write its metrics to this `FILE`")
	fs.BoolVar(&cfg.FirstCheckSoon, "first-check-soon", false, "as plan -first-check-soon (a fresh deployment's servers checked as soon as the caps allow)")
	usage := "usage: run loop -data DIR -servers FILE [-paused FILE] -out DIR [-metrics FILE] [-publish-metrics FILE] [-first-check-soon]" +
		"\n           [-concurrency N] [-grace D] [-timeout D] [-source ADDR] [-v] [-lab [-resolve host:port:addr]... [-ca-file FILE]]" +
		"\n       (run -loop ... is the same; a minute at a time: run minute -h)"
	if err := cli.ParseMode(fs, args, stdout, stderr, usage, func() error { return cfg.Validate() }); err != nil {
		return err
	}
	logger := cfg.logger(stderr)
	runMinute, err := cfg.minuteRunner(stdout, logger)
	if err != nil {
		return err
	}
	plan, err := planStep(cfg, stdout, stderr)
	if err != nil {
		return err
	}
	return runner.Loop(ctx, runner.LoopConfig{Logger: logger, Pipeline: runner.Pipeline{
		Plan:    plan,
		Run:     runMinute,
		Publish: publishStep(cfg, stdout, logger),
	}})
}

// planStep returns the loop's plan step: planner.PlanMinute, in process,
// as cmd/plan calls it, so the loop and the crontab line take one code
// path. It logs as plan does: warnings, and each step with -v.
func planStep(cfg loopConfig, stdout, stderr io.Writer) (func(context.Context, time.Time) error, error) {
	logger := cli.Logger(stderr, slog.LevelWarn, slog.LevelInfo, cfg.Verbose)
	paused, fetch, err := pause.ListSource(cfg.Paused, "", cfg.Data, logger, nil)
	if err != nil {
		return nil, err
	}
	pc := planner.Config{Servers: cfg.Servers, Paused: paused, FetchPaused: fetch, Data: cfg.Data, FirstCheckSoon: cfg.FirstCheckSoon, Logger: logger}
	return func(ctx context.Context, minute time.Time) error {
		c := pc
		c.Minute = minute
		sum, err := planner.PlanMinute(ctx, c)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, sum)
		return nil
	}, nil
}

// publishStep returns the loop's publish step: site.Publish, as cmd/publish
// calls it, and its metrics with -publish-metrics.
func publishStep(cfg loopConfig, stdout io.Writer, logger *slog.Logger) func(context.Context) error {
	return func(ctx context.Context) error {
		started := time.Now()
		st, err := site.Publish(ctx, site.Config{DataDir: cfg.Data, ServersPath: cfg.Servers, PausedPath: lists.LocalPausedList(cfg.Data, cfg.Paused), OutDir: cfg.Out, Logger: logger})
		if cfg.PublishMetrics != "" {
			if merr := metrics.WritePublish(cfg.PublishMetrics, metrics.PublishOf(st, err, started, time.Now())); merr != nil {
				err = errors.Join(err, merr)
			}
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "published %d servers: %d files written, %d results, in %s\n",
			st.Servers, st.Written, st.Results, st.Took.Round(time.Millisecond))
		return nil
	}
}
