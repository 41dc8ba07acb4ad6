package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"plug.directory/prober/cmd/internal/cli"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/internal/durable"
	"plug.directory/prober/planner/sim"
)

// genConfig is what plan generate does: a test list to simulate.
type genConfig struct {
	Generate int       // servers to generate
	Out      string    // where to write the generated list
	BigHost  int       // servers on one host beyond its caps; -1: a twentieth
	Hosts    int       // hosts; 0: a tenth of the servers
	Late     float64   // share added during the day after Base
	Base     time.Time // servers are added before it, Late of them in the day after; zero: now
	Shared   float64   // share listed again at their address under a new id (sim.GenConfig)
	Distinct bool      // with Shared: each second listing at an address of its own on the same host
	Seed     uint64
}

// Validate reports everything missing or out of range in c.
func (c genConfig) Validate() error {
	var errs []error
	if c.Generate <= 0 {
		errs = append(errs, errors.New("-generate needs a positive number of servers"))
	}
	if c.Out == "" {
		errs = append(errs, errors.New("-generate needs -out FILE"))
	}
	if c.Shared < 0 || c.Shared > 1 {
		errs = append(errs, fmt.Errorf("-shared %g: want a share between 0 and 1", c.Shared))
	}
	return errors.Join(errs...)
}

// runGenerate is plan generate N (plan -generate N).
func runGenerate(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plan generate", flag.ContinueOnError)
	var cfg genConfig
	fs.IntVar(&cfg.Generate, "generate", 0, "write a test list of this many servers to -out")
	fs.StringVar(&cfg.Out, "out", "", "the `FILE` to write")
	fs.IntVar(&cfg.BigHost, "big-host", -1, "servers on one host beyond its caps (default a twentieth)")
	fs.IntVar(&cfg.Hosts, "hosts", 0, "number of hosts (default a tenth of the servers)")
	fs.Float64Var(&cfg.Late, "late", 0.005, "share of servers added during the day after -base")
	fs.Float64Var(&cfg.Shared, "shared", 0, "share of servers listed a second time at their address, under a new id")
	fs.BoolVar(&cfg.Distinct, "distinct", false, "with -shared: each second listing at an address of its own on the same host, to compare")
	cli.TimeVar(fs, &cfg.Base, "base", "the `time` the list is as of (default now): "+cli.TimeForms)
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the generated list")
	usage := "usage: plan generate N -out FILE [-big-host N] [-hosts N] [-late 0.005] [-shared 0.2 [-distinct]] [-base TIME] [-seed N]" +
		"\n       (plan -generate N ... is the same)"
	if err := cli.ParseMode(fs, args, stdout, stderr, usage, func() error { return cfg.Validate() }); err != nil {
		return err
	}
	return generate(cfg, stdout)
}

// generate writes a test list of cfg.Generate servers to cfg.Out.
func generate(cfg genConfig, stdout io.Writer) error {
	base := cfg.Base
	if base.IsZero() {
		base = Config{}.clock().Time() // now, read as the planner reads it
	}
	big := cfg.BigHost
	if big < 0 {
		big = cfg.Generate / 20
	}
	servers := sim.Generate(sim.GenConfig{
		Servers: cfg.Generate, Hosts: cfg.Hosts, BigHost: big, Base: base, Late: cfg.Late, NoURL: 0.01,
		Shared: cfg.Shared, Distinct: cfg.Distinct, Seed: cfg.Seed,
	})
	var buf bytes.Buffer
	if err := lists.WriteServers(&buf, servers); err != nil {
		return err
	}
	if err := durable.WriteFileAtomic(cfg.Out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	fmt.Fprintf(stdout, "wrote %d servers (%d on one host, %d listed again at an address) to %s\n", len(servers), big, len(servers)-cfg.Generate, cfg.Out)
	return nil
}
