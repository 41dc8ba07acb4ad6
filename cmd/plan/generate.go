package main

import (
	"bytes"
	"fmt"
	"io"

	"plug.directory/prober/data"
	"plug.directory/prober/planner/sim"
)

// generate writes a test list of cfg.Generate servers to cfg.Out.
func generate(cfg Config, stdout io.Writer) error {
	base := cfg.Base
	if base.IsZero() {
		base = cfg.clock().Time()
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
	if err := data.WriteServers(&buf, servers); err != nil {
		return err
	}
	if err := data.WriteFileAtomic(cfg.Out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	fmt.Fprintf(stdout, "wrote %d servers (%d on one host, %d listed again at an address) to %s\n", len(servers), big, len(servers)-cfg.Generate, cfg.Out)
	return nil
}
