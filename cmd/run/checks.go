package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"time"

	"plug.directory/prober/cmd/internal/cli"
	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/runner"
	"plug.directory/prober/runner/check"
)

// checksConfig is how planned checks run, in a minute or in the loop.
type checksConfig struct {
	Data        string        // data directory
	Concurrency int           // checks in flight at most; 0 means runner.DefaultConcurrency
	Grace       time.Duration // after SIGTERM, how long checks in flight may finish
	Timeout     time.Duration // one check, all requests together (rule N10); at most data.CheckTimeout
	Source      netip.Addr    // rule N11; zero means any
	Lab         check.Lab
	Verbose     bool
	Metrics     string // after each run, write its metrics to this file; "" for none
}

// register adds the flags of c to fs.
func (c *checksConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.Data, "data", "", "data `DIR`: plans/ in; journal/, results/, state/, run/ out")
	fs.IntVar(&c.Concurrency, "concurrency", runner.DefaultConcurrency, "most checks in flight at once")
	fs.DurationVar(&c.Grace, "grace", data.CheckTimeout+5*time.Second, "after SIGTERM, how long checks in flight may finish before they are recorded as interrupted")
	fs.DurationVar(&c.Timeout, "timeout", data.CheckTimeout, "give up a check after this long, all requests together (at most 45s, rule N10)")
	fs.Func("source", "leave from this local IPv4 `address` (rule N11)", func(v string) error {
		a, err := netip.ParseAddr(v)
		if err != nil || !a.Is4() {
			return fmt.Errorf("not an IPv4 address: %q", v)
		}
		c.Source = a
		return nil
	})
	c.Lab.RegisterFlags(fs)
	fs.BoolVar(&c.Verbose, "v", false, "log every check")
	fs.StringVar(&c.Metrics, "metrics", "", "after each run, write metrics to this `FILE` (Prometheus text format, for node_exporter's textfile collector), replaced atomically")
}

// Validate reports everything missing or out of range in c, each problem
// on its own (errors.Join).
func (c checksConfig) Validate() error {
	var errs []error
	if c.Data == "" {
		errs = append(errs, errors.New("-data DIR is required (or run check URL to check one server now)"))
	}
	if c.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("-concurrency %d: want a positive number", c.Concurrency))
	}
	if c.Grace < 0 {
		errs = append(errs, fmt.Errorf("-grace %s: want a positive duration", c.Grace))
	}
	if c.Timeout <= 0 || c.Timeout > data.CheckTimeout {
		errs = append(errs, fmt.Errorf("-timeout %s: want a positive duration of at most %s (rule N10)", c.Timeout, data.CheckTimeout))
	}
	return errors.Join(append(errs, c.Lab.Validate())...)
}

// logger returns the log of the checks on stderr: each check with -v.
func (c checksConfig) logger(stderr io.Writer) *slog.Logger {
	return cli.Logger(stderr, slog.LevelInfo, slog.LevelDebug, c.Verbose)
}

// minuteRunner returns what runs one minute's planned checks: runner.Run,
// then its metrics with -metrics, and its one line on stdout. A minute
// whose run recorded every planned check is marked recorded (status.json);
// a full disk is explained (diskFull).
func (c checksConfig) minuteRunner(stdout io.Writer, logger *slog.Logger) (func(ctx context.Context, minute time.Time) error, error) {
	checker, err := runner.NewChecker(check.Config{SourceAddr: c.Source, Lab: c.Lab, Timeout: c.Timeout, Logger: logger})
	if err != nil {
		return nil, err
	}
	rcfg := runner.Config{Dir: c.Data, Checker: checker, Concurrency: c.Concurrency, Grace: c.Grace, Logger: logger}
	return func(ctx context.Context, minute time.Time) error {
		started := time.Now()
		sum, err := runner.Run(ctx, rcfg, minute)
		if err == nil && sum.Interrupted == 0 && sum.NotStarted == 0 {
			if merr := spool.MarkMinuteRecorded(c.Data, sum.Minute); merr != nil {
				// The checks are recorded; only status.json lags.
				logger.Error("status.json does not show this minute as recorded", "err", merr)
			}
		}
		err = diskFull(err, c.Data, sum)
		if c.Metrics != "" {
			if merr := writeRunMetrics(c.Metrics, c.Data, sum, err, started, logger); merr != nil {
				err = errors.Join(err, merr)
			}
		}
		if err != nil {
			return err
		}
		printSummary(stdout, sum)
		return nil
	}, nil
}
