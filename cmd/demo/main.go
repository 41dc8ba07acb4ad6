package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"plug.directory/prober/cmd/internal/cli"
	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
	"plug.directory/prober/runner/fleet"
)

func main() { cli.Main("demo", run) }

// planMargin is the least time left before a minute for the demo to plan
// it: plan refuses a minute that has begun (rule S9), and starting the
// fleet and the plan command take a moment, longer on a loaded machine
// (a test run of every package at once).
const planMargin = 5 * time.Second

// runGrace is how long checks in flight may go on after Ctrl-C.
const runGrace = time.Second

// markerName marks a directory the demo made, which a later run may empty.
const markerName = ".prober-demo"

// demoContact is the operator's address the demo's site gives (publish
// -contact): one of the demo's own domain, demo.test, which no mail reaches.
const demoContact = "probe@demo.test"

// Config is one demo run.
type Config struct {
	Bin     string           // directory of the built plan, run and publish
	Dir     string           // demo directory: lists, fleet CA, data, site
	Timeout time.Duration    // check deadline in the lab (run -timeout); 0 means the check's own, 45 s
	Serve   bool             // only start the fleet and print a one-off check command per server, until stopped
	Now     func() time.Time // nil means time.Now
}

// Validate reports the first thing missing or wrong in c.
func (c Config) Validate() error {
	switch {
	case c.Bin == "":
		return errors.New("-bin DIR is required")
	case c.Dir == "":
		return errors.New("-dir DIR is required")
	case c.Timeout < 0 || c.Timeout > data.CheckTimeout:
		return fmt.Errorf("-timeout %s: want between 0 and %s", c.Timeout, data.CheckTimeout)
	}
	return nil
}

func (c Config) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

// paths are the files of one demo run, under Config.Dir.
type paths struct {
	dir, servers, paused, fleet, data, site string
}

func pathsOf(dir string) paths {
	return paths{
		dir:     dir,
		servers: filepath.Join(dir, "servers.csv"),
		paused:  filepath.Join(dir, "paused.txt"),
		fleet:   filepath.Join(dir, "fleet"),
		data:    filepath.Join(dir, "data"),
		site:    filepath.Join(dir, "site"),
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	var cfg Config
	fs.StringVar(&cfg.Bin, "bin", "bin", "`DIR` of the built plan, run and publish commands")
	fs.StringVar(&cfg.Dir, "dir", "demo-out", "demo `DIR`: emptied, then the lists, the data and the site")
	fs.DurationVar(&cfg.Timeout, "timeout", 10*time.Second, "lab check deadline passed to run -timeout (0: the check's 45 s)")
	fs.BoolVar(&cfg.Serve, "serve", false, "only start the fleet and print how to check each server once (run -url), until Ctrl-C")
	usage := "usage: demo [-bin DIR] [-dir DIR] [-timeout D] [-serve]"
	if err := cli.ParseMode(fs, args, stdout, stderr, usage, func() error { return cfg.Validate() }); err != nil {
		return err
	}
	if cfg.Serve {
		return serve(ctx, cfg, stdout)
	}
	return demo(ctx, cfg, stdout)
}

// serve starts the demo's fleet under plain names and keeps it up until
// ctx ends, printing for each server the one-off check (run -url) that
// reaches it in the lab setting.
func serve(ctx context.Context, cfg Config, out io.Writer) error {
	ps := pathsOf(cfg.Dir)
	if err := prepareDir(ps, out); err != nil {
		return err
	}
	ms := members()
	lst := listing{members: ms}
	for _, m := range ms {
		lst.ids = append(lst.ids, m.name)
	}
	fl, err := fleet.Start(fleet.Config{Servers: lst.specs(), Dir: ps.fleet})
	if err != nil {
		return err
	}
	defer fl.Close()
	printFleet(out, lst, fl)
	lab := "-lab -ca-file " + fl.CAFile()
	if cfg.Timeout > 0 {
		// The server that never answers then costs -timeout, not 45 s.
		lab += " -timeout " + cfg.Timeout.String()
	}
	fmt.Fprintf(out, "\nCheck one server once, as its owner would (Ctrl-C stops the fleet):\n\n")
	for _, s := range fl.Servers() {
		addr := fl.Resolve()[fmt.Sprintf("%s:%d", s.Host, fleet.Port)]
		fmt.Fprintf(out, "  %s %s -resolve %s:%d:%s -url %s\n", filepath.Join(cfg.Bin, "run"), lab, s.Host, fleet.Port, addr, s.URL)
	}
	<-ctx.Done()
	fmt.Fprintln(out, "\nstopping the fleet")
	return fl.Close()
}

// demo runs the whole demo; see the package documentation.
func demo(ctx context.Context, cfg Config, out io.Writer) error {
	began := cfg.now()
	p := pipeline{bin: cfg.Bin, out: out}
	if err := p.check("plan", "run", "publish"); err != nil {
		return err
	}
	ps := pathsOf(cfg.Dir)
	if err := prepareDir(ps, out); err != nil {
		return err
	}

	minute := began.UTC().Add(planMargin).Truncate(time.Minute).Add(time.Minute)
	lst := newListing(members(), minute)
	fl, err := fleet.Start(fleet.Config{Servers: lst.specs(), Dir: ps.fleet})
	if err != nil {
		return err
	}
	defer fl.Close()
	printFleet(out, lst, fl)

	ranked, err := lst.rankedCSV(began, false)
	if err != nil {
		return err
	}
	if err := writeFiles(map[string][]byte{ps.servers: ranked, ps.paused: lst.pausedText()}); err != nil {
		return err
	}
	at := minute.Format(time.RFC3339)
	fmt.Fprintf(out, "\n1. plan the minute %s, as cron would a minute ahead\n", at)
	if err := p.step(ctx, "plan", "-servers", ps.servers, "-paused", ps.paused, "-data", ps.data, "-at", at); err != nil {
		return err
	}

	// A server listed after the plan was made: its page says "not checked
	// yet" until a later plan picks it up (rule S5).
	ranked, err = lst.rankedCSV(cfg.now(), true)
	if err != nil {
		return err
	}
	if err := writeFiles(map[string][]byte{ps.servers: ranked}); err != nil {
		return err
	}
	fmt.Fprintf(out, "   then %s joins the list, after the plan\n", lateIDs(lst))

	wait := minute.Sub(cfg.now()).Round(time.Second)
	fmt.Fprintf(out, "\n2. run the minute: each check at its planned second (waits %s for %s)\n", wait, minute.Format("15:04:05"))
	// -grace: on Ctrl-C, checks in flight get a second before they are
	// recorded as interrupted, so the demo stops at once.
	runArgs := []string{"-data", ps.data, "-at", at, "-grace", runGrace.String(), "-lab", "-ca-file", fl.CAFile()}
	for _, r := range resolveArgs(fl) {
		runArgs = append(runArgs, "-resolve", r)
	}
	if cfg.Timeout > 0 {
		runArgs = append(runArgs, "-timeout", cfg.Timeout.String())
	}
	if err := p.step(ctx, "run", runArgs...); err != nil {
		return err
	}

	fmt.Fprintf(out, "\n3. publish the JSON and the HTML preview\n")
	if err := p.step(ctx, "publish", "-servers", ps.servers, "-paused", ps.paused, "-data", ps.data, "-out", ps.site, "-contact", demoContact); err != nil {
		return err
	}
	if err := fl.Close(); err != nil {
		return err
	}

	rows, err := summarize(ps, lst, minute, fl)
	if err != nil {
		return err
	}
	fmt.Fprintln(out)
	printSummary(out, rows)
	printUntouched(out, rows)
	index, _ := filepath.Abs(filepath.Join(ps.site, "index.html"))
	fmt.Fprintf(out, "\nThe site: open file://%s\n", index)
	fmt.Fprintf(out, "The demo took %s.\n", cfg.now().Sub(began).Round(time.Second))
	return verify(rows)
}

// prepareDir empties the demo directory of an earlier run, or makes it. A
// directory that has files but not the demo's marker is left alone: it may
// be someone's work.
func prepareDir(ps paths, out io.Writer) error {
	entries, err := os.ReadDir(ps.dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read demo directory: %w", err)
	case len(entries) > 0:
		if _, err := os.Stat(filepath.Join(ps.dir, markerName)); err != nil {
			return fmt.Errorf("demo directory %s has files the demo did not make; name an empty or new one with -dir", ps.dir)
		}
		fmt.Fprintf(out, "emptying %s, made by an earlier demo run\n", ps.dir)
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(ps.dir, e.Name())); err != nil {
				return fmt.Errorf("empty demo directory: %w", err)
			}
		}
	}
	for _, d := range []string{ps.dir, ps.fleet, ps.data, ps.site} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("make demo directory: %w", err)
		}
	}
	marker := "made by cmd/demo; the next demo run empties this directory\n"
	return writeFiles(map[string][]byte{filepath.Join(ps.dir, markerName): []byte(marker)})
}

// writeFiles writes each file atomically.
func writeFiles(files map[string][]byte) error {
	for path, b := range files {
		if err := durable.WriteFileAtomic(path, b, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}

// resolveArgs returns the fleet's hosts as -resolve host:8443:addr values,
// sorted.
func resolveArgs(fl *fleet.Fleet) []string {
	var out []string
	for host, addr := range fl.Resolve() {
		out = append(out, host+":"+addr)
	}
	slices.Sort(out)
	return out
}

func lateIDs(l listing) string {
	var ids []string
	for i, m := range l.members {
		if m.late {
			ids = append(ids, l.ids[i])
		}
	}
	return strings.Join(ids, ", ")
}
