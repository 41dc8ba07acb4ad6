package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"plug.directory/prober/cmd/internal/cli"
	"plug.directory/prober/data"
	"plug.directory/prober/metrics"
	"plug.directory/prober/pause"
	"plug.directory/prober/planner"
	"plug.directory/prober/runner"
	"plug.directory/prober/runner/check"
	"plug.directory/prober/site"
)

// scheduledConfig is what a minute run, or the loop, does.
type scheduledConfig struct {
	Data        string        // data directory
	At          time.Time     // minute to run; zero means the next whole minute, as plan
	Concurrency int           // checks in flight at most; 0 means runner.DefaultConcurrency
	Grace       time.Duration // after SIGTERM, how long checks in flight may finish
	Timeout     time.Duration // one check, all requests together (rule N10); at most data.CheckTimeout
	Source      netip.Addr    // rule N11; zero means any
	Lab         check.Lab
	Verbose     bool
	Metrics     string // after each run, write its metrics to this file; "" for none

	Loop           bool   // plan, run and publish every minute in the foreground
	Servers        string // -loop: ranked list, for plan and publish
	Paused         string // -loop: paused list
	Out            string // -loop: where publish writes the site
	PublishMetrics string // -loop: after each publish, write its metrics to this file; "" for none

	// -loop: servers listed at the first plan first checked as soon as the caps allow (plan -first-check-soon)
	FirstCheckSoon bool
}

// Validate reports the first thing missing or contradictory.
func (c scheduledConfig) Validate() error {
	switch {
	case c.Data == "":
		return errors.New("-data DIR is required (or -url to check one server now)")
	case c.Concurrency < 0:
		return fmt.Errorf("-concurrency %d: want a positive number", c.Concurrency)
	case c.Grace < 0:
		return fmt.Errorf("-grace %s: want a positive duration", c.Grace)
	case c.Timeout <= 0 || c.Timeout > data.CheckTimeout:
		return fmt.Errorf("-timeout %s: want a positive duration of at most %s (rule N10)", c.Timeout, data.CheckTimeout)
	case !c.At.IsZero() && !c.At.Equal(c.At.Truncate(time.Minute)):
		return fmt.Errorf("-at %s: not a whole minute", c.At.Format(time.RFC3339Nano))
	case c.Loop && !c.At.IsZero():
		return errors.New("-loop runs every minute: -at does not go with it")
	case c.Loop && (c.Servers == "" || c.Out == ""):
		return errors.New("-loop needs -servers FILE and -out DIR for plan and publish")
	case !c.Loop && (c.Servers != "" || c.Out != "" || c.PublishMetrics != ""):
		return errors.New("-servers, -out and -publish-metrics are for -loop only")
	case !c.Loop && c.FirstCheckSoon:
		return errors.New("-first-check-soon is for -loop only (or plan -first-check-soon)")
	}
	return c.Lab.Validate()
}

// runScheduled runs the planned checks of one minute, or with -loop plans,
// runs and publishes every minute until SIGTERM:
//
//	run -data DIR [-at MINUTE] [-concurrency N] [-grace D] [-timeout D] [-source ADDR] [-lab ...]
//	run -loop -data DIR -servers FILE [-paused FILE] -out DIR [...]
func runScheduled(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var cfg scheduledConfig
	fs.StringVar(&cfg.Data, "data", "", "data `DIR`: plans/ in; journal/, results/, state/, run/ out")
	cli.TimeVar(fs, &cfg.At, "at", "`minute` to run (default the next whole minute, as plan): "+cli.TimeForms)
	fs.IntVar(&cfg.Concurrency, "concurrency", runner.DefaultConcurrency, "most checks in flight at once")
	fs.DurationVar(&cfg.Grace, "grace", data.CheckTimeout+5*time.Second, "after SIGTERM, how long checks in flight may finish before they are recorded as interrupted")
	fs.DurationVar(&cfg.Timeout, "timeout", data.CheckTimeout, "give up a check after this long, all requests together (at most 45s, rule N10)")
	fs.Func("source", "leave from this local IPv4 `address` (rule N11)", func(v string) error {
		a, err := netip.ParseAddr(v)
		if err != nil || !a.Is4() {
			return fmt.Errorf("not an IPv4 address: %q", v)
		}
		cfg.Source = a
		return nil
	})
	cfg.Lab.RegisterFlags(fs)
	fs.BoolVar(&cfg.Verbose, "v", false, "log every check")
	fs.StringVar(&cfg.Metrics, "metrics", "", "after each run, write metrics to this `FILE` (Prometheus text format, for node_exporter's textfile collector), replaced atomically")
	fs.StringVar(&cfg.PublishMetrics, "publish-metrics", "", "-loop: after each publish, write its metrics to this `FILE`")
	fs.BoolVar(&cfg.Loop, "loop", false, "plan, run and publish every minute in the foreground until SIGTERM (for containers without cron)")
	fs.StringVar(&cfg.Servers, "servers", "", "-loop: ranked list `FILE` for plan and publish")
	fs.StringVar(&cfg.Paused, "paused", "", "-loop: paused list `FILE` (or what plan -paused takes)")
	fs.StringVar(&cfg.Out, "out", "", "-loop: `DIR` where publish writes the site")
	fs.BoolVar(&cfg.FirstCheckSoon, "first-check-soon", false, "-loop: as plan -first-check-soon (a fresh deployment's servers checked as soon as the caps allow)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: run -data DIR [-at MINUTE] [-concurrency N] [-grace D] [-timeout D] [-source ADDR] [-metrics FILE] [-lab [-resolve host:port:addr]... [-ca-file FILE]]")
		fmt.Fprintln(fs.Output(), "       run -loop -data DIR -servers FILE [-paused FILE] -out DIR [-publish-metrics FILE] [same flags]")
		fmt.Fprintln(fs.Output(), "       run -url https://host/mcp ... (one check now; see run -url -h)")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args, stdout, stderr); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return usageError(err)
	}
	level := slog.LevelInfo
	if cfg.Verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	checker, err := runner.NewChecker(check.Config{SourceAddr: cfg.Source, Lab: cfg.Lab, Timeout: cfg.Timeout, Logger: logger})
	if err != nil {
		return err
	}
	rcfg := runner.Config{Dir: cfg.Data, Checker: checker, Concurrency: cfg.Concurrency, Grace: cfg.Grace, Logger: logger}
	runMinute := func(ctx context.Context, minute time.Time) error {
		started := time.Now()
		sum, err := runner.Run(ctx, rcfg, minute)
		if cfg.Metrics != "" {
			if merr := writeRunMetrics(cfg.Metrics, cfg.Data, sum, err, started, logger); merr != nil {
				err = errors.Join(err, merr)
			}
		}
		if err != nil {
			return err
		}
		printSummary(stdout, sum)
		return nil
	}
	if cfg.Loop {
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
	minute := cfg.At
	if minute.IsZero() {
		minute = time.Now().UTC().Truncate(time.Minute).Add(time.Minute)
	}
	return runMinute(ctx, minute)
}

// printSummary prints one line about a finished run.
func printSummary(w io.Writer, s runner.Summary) {
	var outcomes []string
	for _, o := range data.Outcomes {
		if n := s.Outcomes[o]; n > 0 {
			outcomes = append(outcomes, fmt.Sprintf("%d %s", n, o))
		}
	}
	line := fmt.Sprintf("%s: %d planned, %d completed", s.Minute.Format(time.RFC3339), s.Planned, s.Completed)
	if len(outcomes) > 0 {
		line += " (" + strings.Join(outcomes, ", ") + ")"
	}
	if s.Interrupted > 0 || s.NotStarted > 0 {
		line += fmt.Sprintf(", %d interrupted, %d not started", s.Interrupted, s.NotStarted)
	}
	line += fmt.Sprintf("; start lateness p99 %s, max %s; folded %d results",
		s.P99Lateness.Round(time.Millisecond), s.MaxLateness.Round(time.Millisecond), s.Fold.Results)
	fmt.Fprintln(w, line)
}

// planStep returns the loop's plan step: planner.PlanMinute, in process,
// as cmd/plan calls it, so the loop and the crontab line take one code
// path. It logs as plan does: warnings, and each step with -v.
func planStep(cfg scheduledConfig, stdout, stderr io.Writer) (func(context.Context, time.Time) error, error) {
	level := slog.LevelWarn
	if cfg.Verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
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
func publishStep(cfg scheduledConfig, stdout io.Writer, logger *slog.Logger) func(context.Context) error {
	return func(ctx context.Context) error {
		started := time.Now()
		st, err := site.Publish(ctx, site.Config{DataDir: cfg.Data, ServersPath: cfg.Servers, PausedPath: data.LocalPausedList(cfg.Data, cfg.Paused), OutDir: cfg.Out, Logger: logger})
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

// writeRunMetrics writes the metrics of a run that began at started and
// returned sum and runErr: the summary's figures, and the deferrals and
// host caps read back from the plan and the ledger (logged, and left out,
// when they cannot be read).
func writeRunMetrics(path, dir string, sum runner.Summary, runErr error, started time.Time, logger *slog.Logger) error {
	m := metrics.Run{
		Minute: sum.Minute, Finished: time.Now(), OK: runErr == nil,
		Planned: sum.Planned, Checks: map[metrics.Check]int{}, Interrupted: sum.Interrupted, NotStarted: sum.NotStarted,
		Lateness: sum.Lateness, FoldTook: sum.Fold.Took, FoldResults: sum.Fold.Results,
	}
	m.Took = m.Finished.Sub(started)
	for k, n := range sum.Checks {
		m.Checks[metrics.Check{Status: k.Status, Reason: k.Reason}] = n
	}
	pf, err := metrics.ReadPlanFigures(dir, sum.Minute)
	if err != nil {
		logger.Warn("metrics: deferrals and host caps left out", "err", err)
	}
	m.Plan = pf
	damage, bad, err := data.ReadHistoryDamage(dir)
	for _, b := range append(bad, err) {
		if b != nil {
			logger.Warn("metrics: a record of history damage left out", "err", b)
		}
	}
	m.HistoryDamage = damage
	return metrics.WriteRun(path, m)
}
