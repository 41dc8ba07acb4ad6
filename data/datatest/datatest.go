// Package datatest holds the fixtures the tests of data's stores share (a
// fixed first minute, a result made in one line). Only tests import it.
package datatest

import (
	"time"

	"plug.directory/prober/data"
)

// T0 is the fixtures' first minute, 2026-12-02 10:00 UTC.
var T0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// NewResult returns a check of id that started at at and ended with st a
// second later, listing two tools.
func NewResult(id string, at time.Time, st data.Outcome) data.Result {
	return data.Result{ID: id, URL: "https://" + id + ".example/mcp", Host: id + ".example", Status: st,
		Started: at, Finished: at.Add(time.Second), Tools: []string{"a", "b"}, ToolCount: 2}
}
