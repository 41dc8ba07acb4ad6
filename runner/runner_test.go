package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"plug.directory/prober/data"
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

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// MustPlan writes the plan of minute: check i is "<host>/<id>" at offset.
func MustPlan(tb testing.TB, dir string, minute time.Time, checks ...data.PlannedCheck) {
	tb.Helper()
	if err := data.WritePlan(dir, minute, checks); err != nil {
		tb.Fatal(err)
	}
}

// planned returns a check of server id on host at minute+offset.
func planned(id, host string, at time.Time) data.PlannedCheck {
	return data.PlannedCheck{At: at, Due: at, ID: id, URL: "https://" + host + ":8443/mcp", Host: host, Reason: data.ReasonRoutine, Rank: 1}
}

// MustHistory folds and returns every result of the day of minute0.
func MustHistory(tb testing.TB, dir string) []data.Result {
	tb.Helper()
	if _, err := data.Fold(dir, quiet()); err != nil {
		tb.Fatal(err)
	}
	rs, bad, err := data.ReadHistory(dir, minute0.Add(-24*time.Hour), minute0.Add(24*time.Hour))
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

func TestRules(t *testing.T) {
	t.Parallel()
	t.Run("S9_never_early", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		var checks []data.PlannedCheck
		for i := range 60 {
			checks = append(checks, planned(fmt.Sprintf("s%02d", i), fmt.Sprintf("h%02d.lab.test", i%7), minute0.Add(time.Duration(i)*time.Second)))
		}
		MustPlan(t, dir, minute0, checks...)
		clock := newScaledClock(minute0.Add(-time.Second), 60)
		sum, err := Run(context.Background(), Config{Dir: dir, Checker: workingAfter(clock, 3*time.Second, nil), Clock: clock, Logger: quiet()}, minute0)
		if err != nil {
			t.Fatal(err)
		}
		rs := MustHistory(t, dir)
		if len(rs) != 60 || sum.Completed != 60 {
			t.Fatalf("history has %d results, summary %d completed; want 60", len(rs), sum.Completed)
		}
		// On a clock 60 times faster, a millisecond of scheduling is 60 ms.
		checkNeverEarly(t, rs, 900*time.Millisecond)
		checkSpacing(t, rs)
		for _, r := range rs {
			if r.Reason != data.ReasonRoutine || r.ProberVersion == "" || r.Status != data.Working {
				t.Errorf("result lost plan fields: %+v", r)
			}
		}
	})
	t.Run("S9_host_spacing_late_start", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		// Ten checks of one host a second apart, and five of others, all
		// due before the run starts 20 s late.
		var checks []data.PlannedCheck
		for i := range 10 {
			checks = append(checks, planned(fmt.Sprintf("busy%d", i), "busy.lab.test", minute0.Add(time.Duration(i)*time.Second)))
		}
		for i := range 5 {
			checks = append(checks, planned(fmt.Sprintf("other%d", i), fmt.Sprintf("o%d.lab.test", i), minute0.Add(time.Duration(i)*time.Second)))
		}
		MustPlan(t, dir, minute0, checks...)
		clock := newScaledClock(minute0.Add(20*time.Second), 40)
		sum, err := Run(context.Background(), Config{Dir: dir, Checker: workingAfter(clock, time.Second, nil), Clock: clock, Logger: quiet()}, minute0)
		if err != nil {
			t.Fatal(err)
		}
		rs := MustHistory(t, dir)
		if len(rs) != 15 {
			t.Fatalf("history has %d results, want 15", len(rs))
		}
		checkSpacing(t, rs)
		checkNeverEarly(t, rs, 35*time.Second)
		for _, r := range rs {
			if r.Lateness < 11*time.Second {
				t.Errorf("%s planned %v, started %v: lateness %v not recorded", r.ID, r.Planned, r.Started, r.Lateness)
			}
		}
		if sum.MaxLateness < 20*time.Second {
			t.Errorf("summary max lateness %v, want at least 20 s (the last busy check waits for nine before it)", sum.MaxLateness)
		}
	})
	t.Run("S9_host_spacing_overlapping_runs", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		m1 := minute0.Add(time.Minute)
		// The previous minute's run starts late, so its last checks of the
		// shared host fall on the next minute's first seconds.
		var a, b []data.PlannedCheck
		for i := range 4 {
			a = append(a, planned(fmt.Sprintf("a%d", i), "shared.lab.test", minute0.Add(time.Duration(56+i)*time.Second)))
			b = append(b, planned(fmt.Sprintf("b%d", i), "shared.lab.test", m1.Add(time.Duration(i)*time.Second)))
		}
		MustPlan(t, dir, minute0, a...)
		MustPlan(t, dir, m1, b...)
		clock := newScaledClock(m1.Add(-time.Second), 30)
		var wg sync.WaitGroup
		for _, m := range []time.Time{minute0, m1} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := Run(context.Background(), Config{Dir: dir, Checker: workingAfter(clock, 5*time.Second, nil), Clock: clock, Logger: quiet(), PID: m.Minute()}, m); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		rs := MustHistory(t, dir)
		if len(rs) != 8 {
			t.Fatalf("history has %d results, want 8", len(rs))
		}
		checkSpacing(t, rs)
		checkNeverEarly(t, rs, 15*time.Second)
	})
	t.Run("S9_second_run_of_a_minute_refused", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		MustPlan(t, dir, minute0, planned("s1", "h.lab.test", minute0))
		clock := newScaledClock(minute0, 50)
		cfg := Config{Dir: dir, Checker: workingAfter(clock, 0, nil), Clock: clock, Logger: quiet()}
		if _, err := Run(context.Background(), cfg, minute0); err != nil {
			t.Fatal(err)
		}
		_, err := Run(context.Background(), cfg, minute0.Add(30*time.Second))
		if !errors.Is(err, ErrMinuteTaken) || !strings.Contains(err.Error(), "a minute runs once") || !strings.Contains(err.Error(), "2026-12-02 10:33") {
			t.Errorf("second run: err = %v, want ErrMinuteTaken naming the minute", err)
		}
		if rs := MustHistory(t, dir); len(rs) != 1 {
			t.Errorf("history has %d results, want the first run's 1", len(rs))
		}
	})
	t.Run("no_plan_is_an_error_and_claims_nothing", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		clock := newScaledClock(minute0, 50)
		cfg := Config{Dir: dir, Checker: workingAfter(clock, 0, nil), Clock: clock, Logger: quiet()}
		if _, err := Run(context.Background(), cfg, minute0); !errors.Is(err, data.ErrNoPlan) {
			t.Fatalf("err = %v, want ErrNoPlan", err)
		}
		MustPlan(t, dir, minute0, planned("s1", "h.lab.test", minute0))
		if _, err := Run(context.Background(), cfg, minute0); err != nil {
			t.Errorf("run once the plan exists: %v", err)
		}
	})
	t.Run("concurrency_bound", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		var checks []data.PlannedCheck
		for i := range 40 {
			checks = append(checks, planned(fmt.Sprintf("s%d", i), fmt.Sprintf("h%d.lab.test", i), minute0))
		}
		MustPlan(t, dir, minute0, checks...)
		clock := newScaledClock(minute0, 50)
		var most atomic.Int64
		sum, err := Run(context.Background(), Config{Dir: dir, Checker: workingAfter(clock, 2*time.Second, &most), Clock: clock, Concurrency: 8, Logger: quiet()}, minute0)
		if err != nil {
			t.Fatal(err)
		}
		if m := most.Load(); m > 8 || m < 2 {
			t.Errorf("%d checks in flight at once, want between 2 and the bound 8", m)
		}
		if sum.Completed != 40 {
			t.Errorf("completed %d, want 40", sum.Completed)
		}
	})
}

func TestShutdown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var checks []data.PlannedCheck
	for i := range 30 {
		checks = append(checks, planned(fmt.Sprintf("s%02d", i), fmt.Sprintf("h%d.lab.test", i), minute0.Add(time.Duration(2*i)*time.Second)))
	}
	MustPlan(t, dir, minute0, checks...)
	clock := newScaledClock(minute0, 50)
	ctx, cancel := context.WithCancel(context.Background())
	// s00 to s09 start in the first 20 s; s00 and s01 answer quickly, the
	// others hang until cancelled.
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
	sum, err := Run(ctx, Config{Dir: dir, Checker: checker, Clock: clock, Grace: 5 * time.Second, Logger: quiet()}, minute0)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Completed != 2 || sum.Interrupted != 8 || sum.NotStarted != 20 {
		t.Errorf("summary %+v, want 2 completed, 8 interrupted, 20 not started", sum)
	}
	rs := MustHistory(t, dir)
	if len(rs) != 2 {
		t.Errorf("history has %d results, want the 2 that finished (interrupted ones stay out)", len(rs))
	}
	b, err := os.ReadFile(InterruptedPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 8 {
		t.Errorf("%s has %d lines, want 8 interrupted checks", InterruptedPath(dir), n)
	}
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
	clock := newScaledClock(m1.Add(-2*time.Second), 20)
	checker := MustLabChecker(t, farm, clock)
	var wg sync.WaitGroup
	sums := make([]Summary, 2)
	for i, m := range []time.Time{minute0, m1} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			sums[i], err = Run(context.Background(), Config{Dir: dir, Checker: checker, Clock: clock, Logger: quiet(), PID: 100 + i}, m)
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
	checkNeverEarly(t, rs, 40*time.Second)
	if sums[0].MaxLateness < 18*time.Second {
		t.Errorf("the late run's max lateness is %v, want at least 18 s recorded", sums[0].MaxLateness)
	}
	if got := farm.hitsTotal(); got < 2*48 {
		t.Errorf("servers saw %d requests, want at least 2 per check", got)
	}
}
