// Command plan writes the plan of the next minute's checks (rules S1-S9),
// simulates a day of plans to prove the rules hold, or generates a test
// list to simulate.
//
//	plan -servers FILE -paused FILE -data DIR [-at TIME] [-first-check-soon]
//	plan -servers FILE -paused github:OWNER/REPO/PATH[@REF] -data DIR [-github-api URL]
//	plan -simulate 24h -servers FILE -data DIR [-failing 0.05] [-paused FILE] [-at TIME]
//	plan -generate 100000 -out FILE [-big-host N] [-seed N]
//	plan -rebuild-state -data DIR
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
	"plug.directory/prober/data"
	"plug.directory/prober/pause"
	"plug.directory/prober/planner"
)

func main() { cli.Main("plan", run) }

// Config is what one invocation of plan does. Exactly one of Simulate and
// Generate may be set; with neither, it plans one minute.
type Config struct {
	Servers string    // ranked list CSV
	Paused  string    // paused list: a file, or github:OWNER/REPO/PATH[@REF]; "" for none
	Data    string    // data directory
	At      time.Time // minute to plan, or first minute to simulate; zero: the next whole minute

	AcceptShrink bool // take a ranked list that lost more than data.DefaultMaxShrink of the last good one's servers

	GitHubAPI string // GitHub REST API URL a github: paused list is read from; "" means api.github.com

	FirstCheckSoon bool // servers listed at the first plan: first checked as soon as the host caps allow, not at their slot

	Simulate time.Duration // how long to simulate; 0: plan one minute
	Failing  float64       // share of servers failing in the simulation
	Churn    float64       // share of servers removed, and another share moved, during the simulation
	Seed     uint64        // for the simulation's outcomes and the generator

	Generate int       // servers to generate; 0: do not generate
	Out      string    // where to write the generated list
	BigHost  int       // servers of the generated list on one host beyond its caps; -1: a twentieth
	Hosts    int       // hosts of the generated list; 0: a tenth of the servers
	Late     float64   // share of the generated list added during the day after Base
	Base     time.Time // generated servers are added before it, Late of them in the day after; zero: now
	Shared   float64   // share of the generated servers listed again at their address under a new id (sim.GenConfig)
	Distinct bool      // with Shared: each second listing at an address of its own on the same host

	RebuildState bool // set the state aside and rebuild it from the history, then stop

	Now func() time.Time // nil means time.Now
}

// Validate reports the first thing missing or contradictory in c.
func (c Config) Validate() error {
	switch {
	case c.Simulate != 0 && c.Generate != 0:
		return errors.New("-simulate and -generate do not go together")
	case c.Generate < 0:
		return errors.New("-generate needs a positive number of servers")
	case c.Generate > 0 && c.Out == "":
		return errors.New("-generate needs -out FILE")
	case c.Shared < 0 || c.Shared > 1:
		return fmt.Errorf("-shared %g: want a share between 0 and 1", c.Shared)
	case c.Generate > 0:
		return nil
	case c.RebuildState && c.Data == "":
		return errors.New("-rebuild-state needs -data DIR")
	case c.RebuildState:
		return nil
	case c.Simulate < 0 || c.Simulate%time.Minute != 0:
		return fmt.Errorf("-simulate %s: want a positive whole number of minutes", c.Simulate)
	case c.Servers == "":
		return errors.New("-servers FILE is required")
	case c.Simulate != 0 && pause.IsSpec(c.Paused):
		return errors.New("-simulate takes a local -paused FILE")
	case c.Data == "":
		return errors.New("-data DIR is required")
	case c.Failing < 0 || c.Failing > 0.5:
		return fmt.Errorf("-failing %g: want a share between 0 and 0.5", c.Failing)
	case c.Churn < 0 || c.Churn > 0.25:
		return fmt.Errorf("-churn %g: want a share between 0 and 0.25", c.Churn)
	case !c.At.IsZero() && !c.At.Equal(c.At.Truncate(time.Minute)):
		return fmt.Errorf("-at %s: not a whole minute", c.At.Format(time.RFC3339Nano))
	}
	return nil
}

// clock returns the planner's view of c's clock and minute: the one reading
// of Now (planner.Config.Time) and of the minute to plan or to start
// simulating from (planner.Config.NextMinute).
func (c Config) clock() planner.Config { return planner.Config{Minute: c.At, Now: c.Now} }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	cfg := Config{}
	var debug bool
	fs.StringVar(&cfg.Servers, "servers", "", "ranked list `FILE` (CSV: id,rank,url,added)")
	fs.StringVar(&cfg.Paused, "paused", "", "paused list `FILE` (one id or address a line), or github:OWNER/REPO/PATH[@REF]")
	fs.StringVar(&cfg.GitHubAPI, "github-api", "", "GitHub REST API `URL` for a github: paused list (default https://api.github.com/)")
	fs.StringVar(&cfg.Data, "data", "", "data `DIR`: plans, ledger, results")
	fs.BoolVar(&cfg.AcceptShrink, "accept-shrink", false, "take the ranked list although it lost more than 5% of the last good list's servers")
	cli.TimeVar(fs, &cfg.At, "at", "`minute` to plan (default the next whole minute); with -simulate, the first minute: "+cli.TimeForms)
	fs.BoolVar(&cfg.FirstCheckSoon, "first-check-soon", false, "check the servers listed at the first plan, never checked, as soon as the host caps allow rather than at their slot (a fresh deployment)")
	fs.DurationVar(&cfg.Simulate, "simulate", 0, "simulate this long (e.g. 24h) into an empty -data DIR and audit every rule")
	fs.Float64Var(&cfg.Failing, "failing", 0.05, "with -simulate: share of servers that fail")
	fs.Float64Var(&cfg.Churn, "churn", 0.005, "with -simulate: share of servers removed, and another share moved to a new address")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the simulated outcomes and of the generated list")
	fs.IntVar(&cfg.Generate, "generate", 0, "write a test list of this many servers to -out")
	fs.StringVar(&cfg.Out, "out", "", "with -generate: the `FILE` to write")
	fs.IntVar(&cfg.BigHost, "big-host", -1, "with -generate: servers on one host beyond its caps (default a twentieth)")
	fs.IntVar(&cfg.Hosts, "hosts", 0, "with -generate: number of hosts (default a tenth of the servers)")
	fs.Float64Var(&cfg.Late, "late", 0.005, "with -generate: share of servers added during the day after -base")
	fs.Float64Var(&cfg.Shared, "shared", 0, "with -generate: share of servers listed a second time at their address, under a new id")
	fs.BoolVar(&cfg.Distinct, "distinct", false, "with -generate -shared: each second listing at an address of its own on the same host, to compare")
	cli.TimeVar(fs, &cfg.Base, "base", "with -generate: the `time` the list is as of (default now), in the forms of -at")
	fs.BoolVar(&cfg.RebuildState, "rebuild-state", false, "set the state of -data DIR aside and rebuild it from the history, then stop")
	fs.BoolVar(&debug, "v", false, "log each step")
	if err := cli.Parse(fs, args, stdout, stderr); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return cli.Usage(err)
	}
	level := slog.LevelWarn
	if debug {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	switch {
	case cfg.Generate > 0:
		return generate(cfg, stdout)
	case cfg.Simulate > 0:
		return simulate(ctx, cfg, stdout, logger)
	case cfg.RebuildState:
		st, err := data.RebuildState(cfg.Data)
		for _, b := range st.Bad {
			logger.Warn("skipped a history file", "err", b)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "state rebuilt from the history: %d states from %d results in %d files, %s (old state set aside in %q)\n",
			st.States, st.Results, st.Files, st.Took.Round(time.Millisecond), st.Aside)
		return nil
	default:
		return planMinute(ctx, cfg, stdout, logger)
	}
}
