package main

import (
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/metrics"
)

// sample returns the value of the one sample of name whose labels include
// want, failing the test when there is none.
func sample(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	mf, ok := fams[name]
	if !ok {
		t.Fatalf("no %s in the metrics file", name)
	}
next:
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		return m
	}
	t.Fatalf("no %s%v in the metrics file", name, want)
	return nil
}

// TestScheduledMetrics runs a planned minute with -metrics against a
// loopback server (one check it answers, one it fails with HTTP 500) and
// reads the file back with the client library's text parser: the figures
// are those of the run, of the plan (a deferred check) and of the ledger
// (a server held back, a host at its hourly cap).
func TestScheduledMetrics(t *testing.T) {
	t.Parallel()
	var answered, broken atomic.Int32
	ok := mcpHandler(0)
	// The broken check's host is one of its own, so the runner's second of
	// spacing between two checks of one host does not hold the run back.
	srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/broken" {
			broken.Add(1)
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		answered.Add(1)
		ok.ServeHTTP(w, r)
	}), "broken.test")
	lab := []string{"-lab", "-resolve", srv.resolve, "-resolve", "broken.test:8443:" + srv.addr.String(), "-ca-file", srv.caFile}
	dir := t.TempDir()
	minute := time.Now().UTC().Truncate(time.Minute)
	brokenURL := "https://broken.test:8443/broken"
	if err := spool.WritePlan(dir, minute, []data.PlannedCheck{
		{At: minute, Due: minute, ID: "good", URL: srv.url, Host: "mcp.test", Reason: data.ReasonNew, Rank: 1},
		// Due three minutes ago, deferred to this minute by the host caps.
		{At: minute.Add(time.Second), Due: minute.Add(-3 * time.Minute), ID: "bad", URL: brokenURL, Host: "broken.test", Reason: data.ReasonRetry, Rank: 2},
	}); err != nil {
		t.Fatal(err)
	}
	l := spool.NewLedger()
	end := minute.Add(time.Minute).Unix()
	l.Servers = []spool.LedgerServer{
		{ID: "good", Planned: minute.Unix(), NextDue: minute.Unix()},
		{ID: "waiting", NextDue: end - 600}, // due 10 minutes before the minute's end, not planned
		{ID: "later", NextDue: end + 600},
	}
	l.Hosts = map[string][]spool.HostStart{}
	for i := range data.HostMaxPerHour {
		l.Hosts["busy.test"] = append(l.Hosts["busy.test"], spool.MakeHostStart(end-3000+int64(i)*20, false))
	}
	if err := spool.WriteLedger(dir, l); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "run.prom")
	before := time.Now()
	code, stdout, stderr := runArgs(t, append([]string{"-data", dir, "-at", minute.Format("2006-01-02T15:04"), "-metrics", file}, lab...)...)
	if code != 0 {
		t.Fatalf("run: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	fams, err := metrics.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	gauge := func(name string, labels map[string]string) float64 {
		return sample(t, fams, name, labels).GetGauge().GetValue()
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"prober_run_success", nil, 1},
		{"prober_run_checks_planned", nil, 2},
		{"prober_run_checks", map[string]string{"status": "working", "reason": "new"}, 1},
		{"prober_run_checks", map[string]string{"status": "failing", "reason": "retry"}, 1},
		{"prober_run_checks", map[string]string{"status": "working", "reason": "retry"}, 0},
		{"prober_run_checks_interrupted", nil, 0},
		{"prober_fold_results", nil, 2},
		{"prober_run_minute_timestamp_seconds", nil, float64(minute.Unix())},
		{"prober_plan_deferred_checks", nil, 1},
		{"prober_plan_deferred_longest_seconds", nil, 181},
		{"prober_plan_deferred_waiting", nil, 1},
		{"prober_plan_deferred_oldest_seconds", nil, 600},
		{"prober_plan_hosts_at_hour_cap", nil, 1},
		{"prober_plan_hosts_at_day_cap", nil, 0},
		{"prober_build_info", map[string]string{"version": data.Version()}, 1},
	} {
		if got := gauge(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if n := len(fams["prober_run_checks"].GetMetric()); n != (len(data.Outcomes)-2)*3 {
		t.Errorf("prober_run_checks has %d series, want every outcome of a check (not paused, pending) and reason (%d)", n, (len(data.Outcomes)-2)*3)
	}
	if last := gauge("prober_run_last_success_timestamp_seconds", nil); last < float64(before.Unix()) || last > float64(time.Now().Unix()+1) {
		t.Errorf("last success %v, want between %v and now", last, before.Unix())
	}
	if gauge("prober_fold_duration_seconds", nil) <= 0 || gauge("prober_run_duration_seconds", nil) <= 0 {
		t.Error("fold and run durations are not positive")
	}
	s := sample(t, fams, "prober_run_start_lateness_seconds", nil).GetSummary()
	if s.GetSampleCount() != 2 || len(s.GetQuantile()) != 4 {
		t.Fatalf("lateness summary %v: want 2 checks and 4 quantiles", s)
	}
	for _, q := range s.GetQuantile() {
		if q.GetValue() < 0 || q.GetValue() > s.GetSampleSum() {
			t.Errorf("lateness quantile %v = %v, outside [0, sum %v]", q.GetQuantile(), q.GetValue(), s.GetSampleSum())
		}
	}
	// The wire: the server saw the good check's requests and the broken one's.
	if answered.Load() == 0 || broken.Load() == 0 {
		t.Errorf("server saw %d answered and %d broken requests, want both", answered.Load(), broken.Load())
	}

	// The same minute again fails (a minute runs once): the file says so
	// and keeps the last success time.
	last := gauge("prober_run_last_success_timestamp_seconds", nil)
	code, _, _ = runArgs(t, append([]string{"-data", dir, "-at", minute.Format("2006-01-02T15:04"), "-metrics", file}, lab...)...)
	if code != 1 {
		t.Fatalf("second run: exit %d, want 1", code)
	}
	if fams, err = metrics.ReadFile(file); err != nil {
		t.Fatal(err)
	}
	if got := gauge("prober_run_success", nil); got != 0 {
		t.Errorf("success after a failed run = %v, want 0", got)
	}
	if got := gauge("prober_run_last_success_timestamp_seconds", nil); got != last {
		t.Errorf("last success after a failed run = %v, want %v kept", got, last)
	}
}
