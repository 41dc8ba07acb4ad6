package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"plug.directory/prober/cmd/internal/cli"
	"plug.directory/prober/data"
	"plug.directory/prober/runner"
)

// minuteConfig is what `run minute` does: the planned checks of one minute.
type minuteConfig struct {
	checksConfig
	At time.Time // minute to run; zero means the next whole minute, as plan
}

// Validate reports everything missing or contradictory in c.
func (c minuteConfig) Validate() error {
	var errs []error
	if !c.At.IsZero() && !c.At.Equal(c.At.Truncate(time.Minute)) {
		errs = append(errs, fmt.Errorf("-at %s: not a whole minute", c.At.Format(time.RFC3339Nano)))
	}
	return errors.Join(append(errs, c.checksConfig.Validate())...)
}

// runMinuteMode is `run minute` (and `run -data DIR` without a mode's
// name): it runs the planned checks of one minute and prints one line.
func runMinuteMode(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run minute", flag.ContinueOnError)
	var cfg minuteConfig
	cfg.register(fs)
	cli.TimeVar(fs, &cfg.At, "at", "`minute` to run (default the next whole minute, as plan): "+cli.TimeForms)
	usage := "usage: run [minute] -data DIR [-at MINUTE] [-concurrency N] [-grace D] [-timeout D] [-source ADDR] [-metrics FILE] [-v] [-lab [-resolve host:port:addr]... [-ca-file FILE]]" +
		"\n       (the other modes: run check URL, see run check -h; run loop, see run loop -h)"
	if err := cli.ParseMode(fs, args, stdout, stderr, usage, func() error { return cfg.Validate() }); err != nil {
		return err
	}
	runMinute, err := cfg.minuteRunner(stdout, cfg.logger(stderr))
	if err != nil {
		return err
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

// diskFull returns err, said in full when a full disk stopped the run of
// the data directory dir: which directory's filesystem is full, what the
// run recorded and what is owed again, what to free. Other errors are
// returned as they are.
func diskFull(err error, dir string, sum runner.Summary) error {
	if !errors.Is(err, syscall.ENOSPC) {
		return err
	}
	where := dir
	var pe *fs.PathError
	if errors.As(err, &pe) {
		where = filepath.Dir(pe.Path)
	}
	var lost []string
	switch {
	case sum.Planned > 0 && sum.Completed == sum.Planned:
		lost = append(lost, fmt.Sprintf("the minute's %d checks are recorded in its journal, folded by the next run", sum.Planned))
	case sum.Planned > 0:
		lost = append(lost, fmt.Sprintf("%d of the minute's %d checks recorded; the other %d are owed again: the next plan plans them at once (rule S4), nothing to run by hand",
			sum.Completed, sum.Planned, sum.Planned-sum.Completed))
	}
	return fmt.Errorf("%w: the filesystem holding %s is full; %sfree space on it (df -h %s: the history %s and %s are the largest parts of the data directory; logs beside it), then the next minute goes on by itself",
		err, where, strings.Join(append(lost, ""), "; "), where, data.Dir(dir).Results(), data.Dir(dir).Damaged())
}
