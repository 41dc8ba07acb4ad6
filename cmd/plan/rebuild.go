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
	"plug.directory/prober/data/history"
)

// runRebuildState is plan rebuild-state (plan -rebuild-state): it sets the
// state of the data directory aside and rebuilds it from the history.
func runRebuildState(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plan rebuild-state", flag.ContinueOnError)
	var dir string
	var verbose bool
	fs.Bool("rebuild-state", true, "this mode, as its flag: kept for the command lines that pick it so")
	fs.StringVar(&dir, "data", "", "data `DIR` whose state to rebuild")
	fs.BoolVar(&verbose, "v", false, "log each step")
	usage := "usage: plan rebuild-state -data DIR   (plan -rebuild-state -data DIR is the same)"
	if err := cli.ParseMode(fs, args, stdout, stderr, usage, func() error {
		if dir == "" {
			return errors.New("-rebuild-state needs -data DIR")
		}
		return nil
	}); err != nil {
		return err
	}
	logger := cli.Logger(stderr, slog.LevelWarn, slog.LevelInfo, verbose)
	st, err := history.RebuildState(dir, time.Now())
	for _, b := range st.Bad {
		logger.Warn("skipped a history file", "err", b)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "state rebuilt from the history: %d states from %d results in %d files, %s (old state set aside in %q)\n",
		st.States, st.Results, st.Files, st.Took.Round(time.Millisecond), st.Aside)
	return nil
}
