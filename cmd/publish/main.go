package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"plug.directory/prober/site"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "publish:", err)
		os.Exit(1)
	}
}

// run parses the flags, publishes once and prints what it did on stdout.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("publish", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg site.Config
	var at string
	fs.StringVar(&cfg.DataDir, "data", "", "data directory (journal/, results/, plans/; the site's record goes in DIR/site)")
	fs.StringVar(&cfg.ServersPath, "servers", "", "ranked list CSV")
	fs.StringVar(&cfg.PausedPath, "paused", "", "paused list; empty: no server is paused")
	fs.StringVar(&cfg.OutDir, "out", "", "output directory of the public files")
	fs.BoolVar(&cfg.NoHTML, "no-html", false, "skip the HTML preview")
	fs.IntVar(&cfg.PreviewRows, "preview-rows", 1000, "rows of index.html")
	fs.StringVar(&at, "at", "", "publish as of this RFC 3339 time instead of now")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if at != "" {
		t, err := time.Parse(time.RFC3339, at)
		if err != nil {
			return fmt.Errorf("-at: %w", err)
		}
		cfg.Now = func() time.Time { return t }
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	st, err := site.Publish(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "published %d servers: %d rendered, %d files written, %d unchanged, %d removed, %d results, %d bad inputs, in %s\n",
		st.Servers, st.Rendered, st.Written, st.Unchanged, st.Removed, st.Results, len(st.Bad), st.Took.Round(time.Millisecond))
	return nil
}
