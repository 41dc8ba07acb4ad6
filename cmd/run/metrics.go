package main

import (
	"log/slog"
	"time"

	"plug.directory/prober/data/history"
	"plug.directory/prober/metrics"
	"plug.directory/prober/runner"
)

// writeRunMetrics writes the metrics of a run that began at started and
// returned sum and runErr: the summary's figures, and the deferrals and
// host caps read back from the plan and the ledger, and the history files
// found damaged (logged, and left out, when they cannot be read).
func writeRunMetrics(path, dir string, sum runner.Summary, runErr error, started time.Time, logger *slog.Logger) error {
	m := metrics.Run{
		Minute: sum.Minute, Finished: time.Now(), OK: runErr == nil,
		Planned: sum.Planned, Checks: map[metrics.Check]int{}, Interrupted: sum.Interrupted, NotStarted: sum.NotStarted,
		Lateness: sum.Lateness, FoldTook: sum.Fold.Took, FoldResults: sum.Fold.Results,
	}
	m.Took = m.Finished.Sub(started)
	for k, n := range sum.Checks {
		m.Checks[metrics.Check{Status: k.Status, Reason: k.Reason}] = n
	}
	pf, err := metrics.ReadPlanFigures(dir, sum.Minute)
	if err != nil {
		logger.Warn("metrics: deferrals and host caps left out", "err", err)
	}
	m.Plan = pf
	damage, bad, err := history.ReadHistoryDamage(dir)
	for _, b := range append(bad, err) {
		if b != nil {
			logger.Warn("metrics: a record of history damage left out", "err", b)
		}
	}
	m.HistoryDamage = damage
	return metrics.WriteRun(path, m)
}
