package metrics

import (
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
)

// Run is what one minute's run reports.
type Run struct {
	Minute   time.Time     // the minute run
	Finished time.Time     // when the run ended
	Took     time.Duration // wall time of the run, waiting for the minute included
	OK       bool          // the run went through (a failing server is not a failed run)

	Planned     int             // checks in the minute's plan
	Checks      map[Check]int   // completed checks by outcome and planned reason
	Interrupted int             // checks cancelled at shutdown
	NotStarted  int             // checks not started because the run was stopped
	Lateness    []time.Duration // start lateness of each completed check

	FoldTook    time.Duration // wall time of the fold into the history and the state
	FoldResults int           // results folded

	Plan PlanFigures // from the plan file and the ledger; see ReadPlanFigures

	HistoryDamage []history.HistoryDamage // history files found damaged, ever (history.ReadHistoryDamage)
}

// Check keys completed checks: the outcome and why the check was planned
// (data.ReasonNew, ReasonRetry, ReasonRoutine).
type Check struct {
	Status data.Outcome
	Reason string
}

// latenessQuantiles are the quantiles of start lateness written.
var latenessQuantiles = []float64{0.5, 0.9, 0.99, 1}

// WriteRun writes r to the metrics file at path, atomically. Every outcome
// a check can have and every planned reason is written, 0 when no check had it,
// so a rate or an alert never sees a series vanish.
func WriteRun(path string, r Run) error {
	var f family
	p := namespace + "_run_"
	f.gauge(p+"minute_timestamp_seconds", "The minute the last run ran, Unix time.", unixSeconds(r.Minute))
	f.gauge(p+"checks_planned", "Checks in the last run's plan.", float64(r.Planned))
	checks := prometheus.NewDesc(p+"checks", "Checks the last run completed, by outcome (table O) and why they were planned.", []string{"status", "reason"}, nil)
	for _, o := range data.Outcomes {
		if o == data.Paused || o == data.Pending {
			continue // statuses of a server's page, never of a check
		}
		for _, reason := range []string{data.ReasonNew, data.ReasonRetry, data.ReasonRoutine} {
			f = append(f, prometheus.MustNewConstMetric(checks, prometheus.GaugeValue, float64(r.Checks[Check{o, reason}]), string(o), reason))
		}
	}
	f.gauge(p+"checks_interrupted", "Checks of the last run cancelled at shutdown (not in the history; planned again).", float64(r.Interrupted))
	f.gauge(p+"checks_not_started", "Checks of the last run not started because it was stopped.", float64(r.NotStarted))
	f = append(f, latenessSummary(p+"start_lateness_seconds", r.Lateness))
	f.gauge(namespace+"_fold_duration_seconds", "Wall time of the last run's fold of its journal into the history and the state.", r.FoldTook.Seconds())
	f.gauge(namespace+"_fold_results", "Results the last run's fold moved into the history.", float64(r.FoldResults))
	r.Plan.add(&f)
	addHistoryDamage(&f, r.HistoryDamage)
	return write(path, step{name: "run", finished: r.Finished, ok: r.OK, took: r.Took}, f)
}

// latenessSummary returns the start lateness of a run's checks as a summary
// with exact quantiles (rule S9: a check never starts early, so every value
// is at least 0); quantile 1 is the latest start.
func latenessSummary(name string, ls []time.Duration) prometheus.Metric {
	sorted := slices.Sorted(slices.Values(ls))
	var sum float64
	for _, l := range sorted {
		sum += l.Seconds()
	}
	qs := map[float64]float64{}
	for _, q := range latenessQuantiles {
		if len(sorted) == 0 {
			qs[q] = 0
			continue
		}
		// Nearest rank: the smallest value at or above q of the checks.
		i := int(q*float64(len(sorted))+0.999999) - 1
		qs[q] = sorted[max(0, min(i, len(sorted)-1))].Seconds()
	}
	desc := prometheus.NewDesc(name, "How late the last run's checks started after their planned second; quantile 1 is the latest.", nil, nil)
	return prometheus.MustNewConstSummary(desc, uint64(len(sorted)), sum, qs)
}

// addHistoryDamage adds the history files found damaged: how many were
// restored from their second copy, and one series per file that could not
// be, naming the day and minutes of the checks it took (the series stays,
// so an alert on it holds until an operator clears the record).
func addHistoryDamage(f *family, hs []history.HistoryDamage) {
	restored := 0
	lost := prometheus.NewDesc(namespace+"_history_lost_checks", "A history file damaged in both copies: its checks are lost; by its file, the day and the minutes (HH:MM UTC, \"\" for the whole day) of its runs.", []string{"file", "day", "minutes"}, nil)
	for _, h := range hs {
		if h.Restored {
			restored++
			continue
		}
		*f = append(*f, prometheus.MustNewConstMetric(lost, prometheus.GaugeValue, 1, h.File, h.Day, strings.Join(h.Minutes, " ")))
	}
	f.gauge(namespace+"_history_files_restored", "History files found damaged or missing and restored from their second copy, ever.", float64(restored))
}
