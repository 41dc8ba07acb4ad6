package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"plug.directory/prober/cmd/internal/cli"
	"plug.directory/prober/metrics"
	"plug.directory/prober/site"
)

func main() { cli.Main("publish", run) }

// run parses the flags, publishes once and prints what it did on stdout.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("publish", flag.ContinueOnError)
	var cfg site.Config
	var at time.Time
	var metricsFile string
	fs.StringVar(&cfg.DataDir, "data", "", "data directory written by plan and run (journal/, results/, plans/; the site's record goes in DIR/site)")
	fs.StringVar(&cfg.ServersPath, "servers", "", "ranked list CSV")
	fs.StringVar(&cfg.PausedPath, "paused", "", "paused list; empty: no server is paused")
	fs.StringVar(&cfg.OutDir, "out", "", "output directory of the public files")
	fs.BoolVar(&cfg.NoHTML, "no-html", false, "skip the HTML preview")
	fs.IntVar(&cfg.PreviewRows, "preview-rows", 1000, "rows of index.html")
	cli.ContactVar(fs, &cfg.Contact)
	fs.StringVar(&metricsFile, "metrics", "", "after publishing, write metrics to this `FILE` (Prometheus text format, for node_exporter's textfile collector), replaced atomically")
	cli.TimeVar(fs, &at, "at", "publish as of this `time` instead of now: "+cli.TimeForms)
	usage := "usage: publish -data DIR -servers FILE -out DIR -contact ADDRESS [-paused FILE] [-at TIME] [-metrics FILE] [-no-html] [-preview-rows N]"
	if err := cli.ParseMode(fs, args, stdout, stderr, usage, func() error {
		if err := site.CheckContact(cfg.Contact); err != nil {
			return fmt.Errorf("-contact: %w", err)
		}
		return cfg.Validate()
	}); err != nil {
		return err
	}
	if !at.IsZero() {
		cfg.Now = func() time.Time { return at }
	}
	if err := checkDataDir(cfg.DataDir); err != nil {
		return err
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	started := time.Now()
	st, err := site.Publish(ctx, cfg)
	if metricsFile != "" {
		if merr := metrics.WritePublish(metricsFile, metrics.PublishOf(st, err, started, time.Now())); merr != nil {
			err = errors.Join(err, merr)
		}
	}
	if err != nil {
		return err
	}
	// A server whose files could not be written costs itself only: the
	// rest is published and the exit is 0; the log, status.json and
	// publish.prom name it.
	fmt.Fprintf(stdout, "published %d servers: %d rendered, %d files written, %d unchanged, %d removed, %d results, %d bad inputs, %d servers not written, in %s\n",
		st.Servers, st.Rendered, st.Written, st.Unchanged, st.Removed, st.Results, len(st.Bad), len(st.Unpublished), st.Took.Round(time.Millisecond))
	return nil
}

// dataMarkers are what plan and run leave in a data directory: plan writes
// plans/, run journal/, and its fold state/ and results/. A directory with
// none of them was never written by either (a typo, or the wrong path), and
// publishing from it would rewrite every server's page as never checked.
var dataMarkers = []string{"plans", "journal", "state", "results"}

// checkDataDir returns an error unless dir is a data directory plan or run
// has written to.
func checkDataDir(dir string) error {
	for _, m := range dataMarkers {
		fi, err := os.Stat(filepath.Join(dir, m))
		if err == nil && fi.IsDir() {
			return nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("read data directory %s: %w", dir, err)
		}
	}
	return fmt.Errorf("data directory %s: not written by plan or run (none of %s/ in it); publish reads what they write", dir, strings.Join(dataMarkers, "/, "))
}
