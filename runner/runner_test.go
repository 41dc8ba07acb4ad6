package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
	"plug.directory/prober/data/spool"
)

var minute0 = time.Date(2026, 12, 2, 10, 33, 0, 0, time.UTC)

// fakeChecker is a Checker of func fields.
type fakeChecker struct {
	check func(ctx context.Context, c data.PlannedCheck) data.Result
}

var _ Checker = (*fakeChecker)(nil)

func (f *fakeChecker) Check(ctx context.Context, c data.PlannedCheck) data.Result {
	return f.check(ctx, c)
}

// workingAfter returns a checker that answers working after d on clock,
// and counts the checks in flight at most in maxInFlight.
func workingAfter(clock Clock, d time.Duration, maxInFlight *atomic.Int64) *fakeChecker {
	var inFlight atomic.Int64
	return &fakeChecker{check: func(ctx context.Context, c data.PlannedCheck) data.Result {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		if maxInFlight != nil {
			for {
				m := maxInFlight.Load()
				if n <= m || maxInFlight.CompareAndSwap(m, n) {
					break
				}
			}
		}
		res := data.Result{ID: c.ID, URL: c.URL, Host: c.Host, Status: data.Working, ToolCount: 1, Tools: []string{"echo"}}
		if err := clock.Sleep(ctx, d); err != nil {
			res.Status, res.Detail = data.Failing, "no answer in 45 s"
		}
		return res
	}}
}

// MustPlan writes the plan of minute: check i is "<host>/<id>" at offset.
func MustPlan(tb testing.TB, dir string, minute time.Time, checks ...data.PlannedCheck) {
	tb.Helper()
	if err := spool.WritePlan(dir, minute, checks); err != nil {
		tb.Fatal(err)
	}
}

// planned returns a check of server id on host at minute+offset.
func planned(id, host string, at time.Time) data.PlannedCheck {
	return data.PlannedCheck{At: at, Due: at, ID: id, URL: "https://" + host + ":8443/mcp", Host: host, Reason: data.ReasonRoutine, Rank: 1}
}

// noFold leaves the journals for the test to read: Parquet's zstd encoders
// are pooled across goroutines, which a synctest bubble does not allow.
func noFold(string, time.Time, *slog.Logger) (history.FoldStats, error) {
	return history.FoldStats{}, nil
}

func noCompact(string, time.Time, *slog.Logger) error { return nil }

// MustHistory folds and returns every result.
func MustHistory(tb testing.TB, dir string) []data.Result {
	tb.Helper()
	if _, err := history.Fold(dir, minute0, slog.New(slog.DiscardHandler)); err != nil {
		tb.Fatal(err)
	}
	return MustJournaled(tb, dir)
}

// MustJournaled returns every result, folded or not: those of the days
// around minute0, of the synctest epoch and of the benchmarks, whose
// minutes are the clock's (a bound of minute0's next day left
// BenchmarkMinute without a result from 2026-12-03 on).
func MustJournaled(tb testing.TB, dir string) []data.Result {
	tb.Helper()
	rs, bad, err := history.ReadHistory(dir, time.Date(1999, 12, 30, 0, 0, 0, 0, time.UTC), time.Date(2999, 12, 31, 0, 0, 0, 0, time.UTC))
	if err != nil || len(bad) > 0 {
		tb.Fatalf("read history: %v %v", err, bad)
	}
	return rs
}

// checkSpacing fails when two starts on one host are less than
// data.HostMinSpacing apart (rule S9, on actual start times).
func checkSpacing(t *testing.T, rs []data.Result) {
	t.Helper()
	byHost := map[string][]time.Time{}
	for _, r := range rs {
		byHost[r.Host] = append(byHost[r.Host], r.Started)
	}
	for h, ts := range byHost {
		slices.SortFunc(ts, time.Time.Compare)
		for i := 1; i < len(ts); i++ {
			if gap := ts[i].Sub(ts[i-1]); gap < data.HostMinSpacing {
				t.Errorf("host %s: starts %v and %v only %v apart", h, ts[i-1].Format("15:04:05.000"), ts[i].Format("15:04:05.000"), gap)
			}
		}
	}
}

// checkNeverEarly fails when a check started before its planned second.
func checkNeverEarly(t *testing.T, rs []data.Result, maxLate time.Duration) {
	t.Helper()
	for _, r := range rs {
		if r.Started.Before(r.Planned) || r.Lateness < 0 {
			t.Errorf("%s started %v, before its planned %v", r.ID, r.Started, r.Planned)
		}
		if r.Lateness != r.Started.Sub(r.Planned) {
			t.Errorf("%s lateness %v, want started-planned %v", r.ID, r.Lateness, r.Started.Sub(r.Planned))
		}
		if r.Lateness > maxLate {
			t.Errorf("%s started %v late, more than %v", r.ID, r.Lateness, maxLate)
		}
	}
}

// bubble runs f as a subtest in a synctest bubble: time is virtual and
// moves only when every goroutine of the run waits, so starts and lateness
// are exact. now is the bubble's start, a whole minute.
func bubble(t *testing.T, name string, f func(t *testing.T, now time.Time)) {
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) { f(t, time.Now().UTC()) })
	})
}

// startsOf returns the start times of results on host, sorted, as offsets
// from base.
func startsOf(rs []data.Result, host string, base time.Time) []time.Duration {
	var out []time.Duration
	for _, r := range rs {
		if r.Host == host {
			out = append(out, r.Started.Sub(base))
		}
	}
	slices.Sort(out)
	return out
}

// seconds returns from, from+1s, ..., to.
func seconds(from, to int) []time.Duration {
	var out []time.Duration
	for s := from; s <= to; s++ {
		out = append(out, time.Duration(s)*time.Second)
	}
	return out
}

func TestRules(t *testing.T) {
	t.Parallel()
	clock := SystemClock{} // virtual inside the bubble
	bubble(t, "S9_never_early", func(t *testing.T, now time.Time) {
		dir := t.TempDir()
		m := now.Add(time.Minute) // the next minute, as cron runs it
		var checks []data.PlannedCheck
		for i := range 60 {
			checks = append(checks, planned(fmt.Sprintf("s%02d", i), fmt.Sprintf("h%02d.lab.test", i%7), m.Add(time.Duration(i)*time.Second)))
		}
		MustPlan(t, dir, m, checks...)
		sum, err := Run(t.Context(), Config{Dir: dir, Checker: workingAfter(clock, 3*time.Second, nil), Clock: clock, Logger: slog.New(slog.DiscardHandler), Fold: noFold, Compact: noCompact}, m)
		if err != nil {
			t.Fatal(err)
		}
		rs := MustJournaled(t, dir)
		if len(rs) != 60 || sum.Completed != 60 {
			t.Fatalf("history has %d results, summary %d completed; want 60", len(rs), sum.Completed)
		}
		checkNeverEarly(t, rs, 0)
		for _, r := range rs {
			if !r.Started.Equal(r.Planned) {
				t.Errorf("%s started %v, want exactly its second %v", r.ID, r.Started, r.Planned)
			}
			if r.Reason != data.ReasonRoutine || r.ProberVersion == "" || r.Status != data.Working || r.Duration != 3*time.Second {
				t.Errorf("result lost plan fields: %+v", r)
			}
		}
	})
	bubble(t, "S9_host_spacing_late_start", func(t *testing.T, now time.Time) {
		dir := t.TempDir()
		// Ten checks of one host a second apart, and five of others, all
		// due 11 to 20 s before the run starts.
		m := now.Add(-time.Minute)
		var checks []data.PlannedCheck
		for i := range 10 {
			checks = append(checks, planned(fmt.Sprintf("busy%d", i), "busy.lab.test", m.Add(time.Duration(40+i)*time.Second)))
		}
		for i := range 5 {
			checks = append(checks, planned(fmt.Sprintf("other%d", i), fmt.Sprintf("o%d.lab.test", i), m.Add(time.Duration(40+i)*time.Second)))
		}
		MustPlan(t, dir, m, checks...)
		sum, err := Run(t.Context(), Config{Dir: dir, Checker: workingAfter(clock, time.Second, nil), Clock: clock, Logger: slog.New(slog.DiscardHandler), Fold: noFold, Compact: noCompact}, m)
		if err != nil {
			t.Fatal(err)
		}
		rs := MustJournaled(t, dir)
		if len(rs) != 15 {
			t.Fatalf("history has %d results, want 15", len(rs))
		}
		checkSpacing(t, rs)
		checkNeverEarly(t, rs, 30*time.Second)
		if got, want := startsOf(rs, "busy.lab.test", m), seconds(60, 69); !slices.Equal(got, want) {
			t.Errorf("busy host starts at %v, want one a second from the late start %v", got, want)
		}
		for _, r := range rs {
			var i int
			if _, err := fmt.Sscanf(r.ID, "busy%d", &i); err == nil && r.Started.Sub(m) != time.Duration(60+i)*time.Second {
				t.Errorf("%s started at %v, want %ds: a host's checks start in plan order", r.ID, r.Started.Sub(m), 60+i)
			}
		}
		for i := range 5 {
			if got := startsOf(rs, fmt.Sprintf("o%d.lab.test", i), m); !slices.Equal(got, seconds(60, 60)) {
				t.Errorf("host o%d starts at %v, want at once when the run starts (60s)", i, got)
			}
		}
		if sum.MaxLateness != 20*time.Second {
			t.Errorf("summary max lateness %v, want 20 s recorded", sum.MaxLateness)
		}
	})
	bubble(t, "S9_host_spacing_overlapping_runs", func(t *testing.T, now time.Time) {
		dir := t.TempDir()
		// The previous minute's run starts 4 s late, so its last checks of
		// the shared host meet the next minute's first ones.
		m0, m1 := now.Add(-time.Minute), now
		var a, b []data.PlannedCheck
		for i := range 4 {
			a = append(a, planned(fmt.Sprintf("a%d", i), "shared.lab.test", m0.Add(time.Duration(56+i)*time.Second)))
			b = append(b, planned(fmt.Sprintf("b%d", i), "shared.lab.test", m1.Add(time.Duration(i)*time.Second)))
		}
		MustPlan(t, dir, m0, a...)
		MustPlan(t, dir, m1, b...)
		var wg sync.WaitGroup
		for i, m := range []time.Time{m0, m1} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := Run(t.Context(), Config{Dir: dir, Checker: workingAfter(clock, 45*time.Second, nil), Clock: clock, Logger: slog.New(slog.DiscardHandler), Fold: noFold, Compact: noCompact, PID: 1 + i}, m); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		rs := MustJournaled(t, dir)
		if len(rs) != 8 {
			t.Fatalf("history has %d results, want 8", len(rs))
		}
		checkSpacing(t, rs)
		checkNeverEarly(t, rs, 10*time.Second)
		if got, want := startsOf(rs, "shared.lab.test", m1), seconds(0, 7); !slices.Equal(got, want) {
			t.Errorf("shared host starts at %v, want one a second %v", got, want)
		}
	})
	bubble(t, "S9_second_run_of_a_minute_refused", func(t *testing.T, now time.Time) {
		dir := t.TempDir()
		MustPlan(t, dir, now, planned("s1", "h.lab.test", now))
		cfg := Config{Dir: dir, Checker: workingAfter(clock, 0, nil), Clock: clock, Logger: slog.New(slog.DiscardHandler), Fold: noFold, Compact: noCompact}
		if _, err := Run(t.Context(), cfg, now); err != nil {
			t.Fatal(err)
		}
		_, err := Run(t.Context(), cfg, now.Add(30*time.Second))
		if !errors.Is(err, ErrMinuteTaken) || !strings.Contains(err.Error(), "a minute runs once") || !strings.Contains(err.Error(), now.Format("2006-01-02 15:04")) {
			t.Errorf("second run: err = %v, want ErrMinuteTaken naming the minute", err)
		}
		if rs := MustJournaled(t, dir); len(rs) != 1 {
			t.Errorf("history has %d results, want the first run's 1", len(rs))
		}
	})
	bubble(t, "no_plan_is_an_error_and_claims_nothing", func(t *testing.T, now time.Time) {
		dir := t.TempDir()
		cfg := Config{Dir: dir, Checker: workingAfter(clock, 0, nil), Clock: clock, Logger: slog.New(slog.DiscardHandler), Fold: noFold, Compact: noCompact}
		if _, err := Run(t.Context(), cfg, now); !errors.Is(err, spool.ErrNoPlan) {
			t.Fatalf("err = %v, want ErrNoPlan", err)
		}
		MustPlan(t, dir, now, planned("s1", "h.lab.test", now))
		if _, err := Run(t.Context(), cfg, now); err != nil {
			t.Errorf("run once the plan exists: %v", err)
		}
	})
	bubble(t, "S9_1000_a_minute_all_slow_start_on_time", func(t *testing.T, now time.Time) {
		dir := t.TempDir()
		var checks []data.PlannedCheck
		for i := range 1000 {
			checks = append(checks, planned(fmt.Sprintf("s%04d", i), fmt.Sprintf("h%04d.lab.test", i), now.Add(time.Duration(i%60)*time.Second)))
		}
		MustPlan(t, dir, now, checks...)
		// Every server takes the whole 45 s: 750 checks in flight at once
		// under the default bound.
		var most atomic.Int64
		sum, err := Run(t.Context(), Config{Dir: dir, Checker: workingAfter(clock, data.CheckTimeout, &most), Clock: clock, Logger: slog.New(slog.DiscardHandler), Fold: noFold, Compact: noCompact}, now)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Completed != 1000 || sum.MaxLateness != 0 {
			t.Errorf("completed %d, max lateness %v; want 1000, every one at its second", sum.Completed, sum.MaxLateness)
		}
		if m := most.Load(); m < 700 {
			t.Errorf("at most %d checks in flight, want the ~750 a minute of 45 s checks needs", m)
		}
	})
	bubble(t, "concurrency_bound", func(t *testing.T, now time.Time) {
		dir := t.TempDir()
		var checks []data.PlannedCheck
		for i := range 40 {
			checks = append(checks, planned(fmt.Sprintf("s%d", i), fmt.Sprintf("h%d.lab.test", i), now))
		}
		MustPlan(t, dir, now, checks...)
		var most atomic.Int64
		sum, err := Run(t.Context(), Config{Dir: dir, Checker: workingAfter(clock, 2*time.Second, &most), Clock: clock, Concurrency: 8, Logger: slog.New(slog.DiscardHandler), Fold: noFold, Compact: noCompact}, now)
		if err != nil {
			t.Fatal(err)
		}
		if m := most.Load(); m != 8 {
			t.Errorf("%d checks in flight at once, want the bound 8", m)
		}
		if sum.Completed != 40 || sum.MaxLateness != 8*time.Second {
			t.Errorf("completed %d, max lateness %v; want 40, and 8 s for the last wave of five", sum.Completed, sum.MaxLateness)
		}
	})
}

func TestShutdown(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		now := time.Now()
		clock := SystemClock{}
		var checks []data.PlannedCheck
		for i := range 30 {
			checks = append(checks, planned(fmt.Sprintf("s%02d", i), fmt.Sprintf("h%d.lab.test", i), now.Add(time.Duration(2*i)*time.Second)))
		}
		MustPlan(t, dir, now, checks...)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		// s00 to s09 start in the first 20 s; s00 and s01 answer quickly,
		// the others hang until cancelled.
		var started atomic.Int64
		checker := &fakeChecker{check: func(ctx context.Context, c data.PlannedCheck) data.Result {
			if started.Add(1) == 10 {
				cancel() // SIGTERM while eight checks hang
			}
			d := time.Hour
			if c.ID < "s02" {
				d = 0
			}
			res := data.Result{Status: data.Working}
			if err := clock.Sleep(ctx, d); err != nil {
				res.Status, res.Detail = data.Failing, "no answer in 45 s"
			}
			return res
		}}
		sum, err := Run(ctx, Config{Dir: dir, Checker: checker, Clock: clock, Grace: 5 * time.Second, Logger: slog.New(slog.DiscardHandler), Fold: noFold, Compact: noCompact}, now)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Completed != 2 || sum.Interrupted != 8 || sum.NotStarted != 20 {
			t.Errorf("summary %+v, want 2 completed, 8 interrupted, 20 not started", sum)
		}
		if end := time.Since(now); end != 18*time.Second+5*time.Second {
			t.Errorf("run ended %v after its minute began, want 23 s: the grace after the last start", end)
		}
		rs := MustJournaled(t, dir)
		if len(rs) != 2 {
			t.Errorf("history has %d results, want the 2 that finished (interrupted ones stay out)", len(rs))
		}
		b, err := os.ReadFile(data.Dir(dir).Interrupted())
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "\n"); n != 8 {
			t.Errorf("%s has %d lines, want 8 interrupted checks", data.Dir(dir).Interrupted(), n)
		}
	})
}

// TestLab runs real checks against go-sdk servers on many 127.a.b.c:8443
// names: the previous minute's run starts late and overlaps the next
// minute's run on shared hosts.
func TestLab(t *testing.T) {
	t.Parallel()
	farm := MustLabFarm(t, 12)
	dir := t.TempDir()
	m1 := minute0.Add(time.Minute)
	// Late checks of the previous minute and this minute's checks share
	// hosts 0-3; several servers (ids) share each host.
	var a, b []data.PlannedCheck
	for i := range 24 {
		host := i % 12
		id := fmt.Sprintf("a%02d", i)
		a = append(a, data.PlannedCheck{At: minute0.Add(time.Duration(40+i/12)*time.Second + time.Duration(host)*time.Second),
			ID: id, URL: farm.URL(host%4, id), Host: farm.Hosts[host%4], Reason: data.ReasonRoutine})
		id = fmt.Sprintf("b%02d", i)
		b = append(b, data.PlannedCheck{At: m1.Add(time.Duration(i) * time.Second), ID: id, URL: farm.URL(host, id), Host: farm.Hosts[host], Reason: data.ReasonNew})
	}
	MustPlan(t, dir, minute0, a...)
	MustPlan(t, dir, m1, b...)
	// 26 s of the clock, 20 times faster than the wall's, or 60 under
	// -short (each real check then takes more of a second, as on a loaded
	// machine); make test runs it at 20.
	speed := 20.0
	if testing.Short() {
		speed = 60
	}
	clock := newScaledClock(m1.Add(-2*time.Second), speed)
	checker := MustLabChecker(t, farm, clock)
	var wg sync.WaitGroup
	sums := make([]Summary, 2)
	for i, m := range []time.Time{minute0, m1} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			sums[i], err = Run(context.Background(), Config{Dir: dir, Checker: checker, Clock: clock, Logger: slog.New(slog.DiscardHandler), PID: 100 + i}, m)
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	rs := MustHistory(t, dir)
	if len(rs) != 48 {
		t.Fatalf("history has %d results, want 48", len(rs))
	}
	for _, r := range rs {
		if r.Status != data.Working || r.ToolCount != 1 || r.ServerName != "lab-server" {
			t.Errorf("%s: %s %q (%d tools, server %q), want working with 1 tool", r.ID, r.Status, r.Detail, r.ToolCount, r.ServerName)
		}
	}
	checkSpacing(t, rs)
	// A loaded machine makes the scaled clock's lateness large; the bound
	// only says that each check did start.
	checkNeverEarly(t, rs, 30*time.Minute)
	if sums[0].MaxLateness < 18*time.Second {
		t.Errorf("the late run's max lateness is %v, want at least 18 s recorded", sums[0].MaxLateness)
	}
	if got := farm.hitsTotal(); got < 2*48 {
		t.Errorf("servers saw %d requests, want at least 2 per check", got)
	}
}

// TestRunCompactsPastDays: after its fold, a run compacts the days before
// its own into one file each, losing and duplicating no row.
func TestRunCompactsPastDays(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	yesterday := minute0.Add(-24 * time.Hour)
	for i := range 3 {
		j, err := spool.CreateJournal(dir, fmt.Sprintf("run-old-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Append(data.Result{ID: fmt.Sprintf("old%d", i), URL: "https://o.lab.test/mcp", Host: "o.lab.test",
			Status: data.Working, Started: yesterday.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
		j.Close()
	}
	if _, err := history.Fold(dir, minute0, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	MustPlan(t, dir, minute0, planned("s1", "h.lab.test", minute0))
	clock := newScaledClock(minute0, 50)
	if _, err := Run(context.Background(), Config{Dir: dir, Checker: workingAfter(clock, 0, nil), Clock: clock, Logger: slog.New(slog.DiscardHandler)}, minute0); err != nil {
		t.Fatal(err)
	}
	old, _ := filepath.Glob(filepath.Join(data.Dir(dir).Results(), "date="+yesterday.Format("2006-01-02"), "*.parquet"))
	if len(old) != 1 || !strings.Contains(old[0], "merged-") {
		t.Errorf("yesterday's files after the run: %v, want one merged file", old)
	}
	if rs := MustHistory(t, dir); len(rs) != 4 {
		t.Errorf("history has %d results, want 4 (3 of yesterday, 1 of today)", len(rs))
	}
}
