package runner

import (
	"context"
	"fmt"

	"plug.directory/prober/data"
	"plug.directory/prober/runner/check"
)

// checkChecker runs planned checks with the one-server check of
// runner/check.
type checkChecker struct{ c *check.Checker }

// NewChecker returns the production Checker: the check of runner/check with
// cfg (lab setting, source address, clock). It fails when cfg does not
// validate or its lab CA file cannot be read.
func NewChecker(cfg check.Config) (Checker, error) {
	c, err := check.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("new checker: %w", err)
	}
	return checkChecker{c}, nil
}

// Check runs one planned check, with the protocol and transport the plan
// carries from earlier checks (rule N4: later checks use what was learned).
func (c checkChecker) Check(ctx context.Context, p data.PlannedCheck) data.Result {
	res, _ := c.c.Check(ctx, check.Target{
		ID: p.ID, URL: p.URL, Protocol: p.Protocol, Transport: p.Transport,
		Planned: p.At, Reason: p.Reason,
	})
	return res
}
