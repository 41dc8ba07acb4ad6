package runner

import (
	"context"

	"plug.directory/prober/data"
	"plug.directory/prober/runner/check"
)

// checkChecker runs planned checks with the one-server check of
// runner/check.
type checkChecker struct{ c *check.Checker }

// NewChecker returns the production Checker: the check of runner/check with
// cfg (lab setting, source address, clock). It fails when cfg does not
// validate, its lab CA file cannot be read or its source address is not
// this machine's; the error is check.New's, which names the operation.
func NewChecker(cfg check.Config) (Checker, error) {
	c, err := check.New(cfg)
	if err != nil {
		return nil, err
	}
	return checkChecker{c}, nil
}

// Check runs one planned check, with the protocol and transport the plan
// carries from earlier checks (rule N4: later checks use what was learned).
func (c checkChecker) Check(ctx context.Context, p data.PlannedCheck) data.Result {
	res, _ := c.c.Check(ctx, check.Target{ID: p.ID, URL: p.URL, Protocol: p.Protocol, Transport: p.Transport})
	return res
}
