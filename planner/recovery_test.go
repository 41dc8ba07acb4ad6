package planner

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
)

// recoveryStart is the first minute the recovery tests plan.
var recoveryStart = time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)

// dirWorld is a data directory planned minute by minute as cron does (each
// minute planned the minute before, on an injected clock), whose runs the
// test plays: 200 hourly servers on hosts of their own, each checked at its
// last slot before the first plan.
type dirWorld struct {
	tb      testing.TB
	cfg     Config
	servers []data.Server
	now     time.Time
}

func mustDirWorld(tb testing.TB) *dirWorld {
	tb.Helper()
	dir := tb.TempDir()
	w := &dirWorld{tb: tb}
	for i := range 200 {
		w.servers = append(w.servers, data.Server{ID: fmt.Sprintf("s%03d", i), Rank: i + 1,
			URL: fmt.Sprintf("https://h%03d.example/mcp", i), Added: recoveryStart.Add(-48 * time.Hour)})
	}
	var buf bytes.Buffer
	if err := lists.WriteServers(&buf, w.servers); err != nil {
		tb.Fatal(err)
	}
	list := filepath.Join(dir, "servers.csv")
	if err := os.WriteFile(list, buf.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	w.cfg = Config{Servers: list, Data: dir, Now: func() time.Time { return w.now }}
	var seed []data.Result
	for _, s := range w.servers {
		at := LastSlot(s, recoveryStart)
		seed = append(seed, data.Result{ID: s.ID, URL: s.URL, Host: data.HostOf(s.URL), Reason: data.ReasonRoutine,
			Status: data.Working, Planned: at, Started: at, Finished: at.Add(time.Second)})
	}
	w.journal("seed", seed).Close()
	return w
}

// plan plans minute at one minute before it.
func (w *dirWorld) plan(minute time.Time) (Summary, error) {
	w.now = minute.Add(-time.Minute)
	c := w.cfg
	c.Minute = minute
	return PlanMinute(w.tb.Context(), c)
}

// mustPlan plans minute and fails the test on error.
func (w *dirWorld) mustPlan(minute time.Time) Summary {
	w.tb.Helper()
	sum, err := w.plan(minute)
	if err != nil {
		w.tb.Fatalf("plan %s: %v", minute.Format(time.RFC3339), err)
	}
	return sum
}

// journal writes results to a run's journal, named as the runner names
// it, and returns it still locked, as a run in flight holds it.
func (w *dirWorld) journal(name string, results []data.Result) *spool.Journal {
	w.tb.Helper()
	j, err := spool.CreateJournal(w.cfg.Data, name)
	if err != nil {
		w.tb.Fatal(err)
	}
	for _, r := range results {
		if err := j.Append(r); err != nil {
			w.tb.Fatal(err)
		}
	}
	return j
}

// run plays the run of minute: it reads the plan and journals a working
// result for the first n checks (all for n < 0), then stops, as a run
// killed before it started the rest. The journal is left locked when live.
func (w *dirWorld) run(minute time.Time, n int, live bool) (*spool.Journal, []data.PlannedCheck) {
	w.tb.Helper()
	checks, _, err := spool.ReadPlan(w.cfg.Data, minute)
	if err != nil {
		w.tb.Fatalf("run %s: %v", minute.Format(time.RFC3339), err)
	}
	if n < 0 || n > len(checks) {
		n = len(checks)
	}
	var results []data.Result
	for _, c := range checks[:n] {
		results = append(results, data.Result{ID: c.ID, URL: c.URL, Host: c.Host, Reason: c.Reason, Status: data.Working,
			Planned: c.At, Started: c.At, Finished: c.At.Add(time.Second)})
	}
	j := w.journal(data.RunJournal(minute, 4242), results)
	if !live {
		j.Close()
	}
	return j, checks[n:]
}

// busyMinute plans and runs minute after minute from recoveryStart and
// returns the first minute planned with at least two checks, planned but
// not run.
func (w *dirWorld) busyMinute() (time.Time, Summary) {
	w.tb.Helper()
	for m := recoveryStart; m.Before(recoveryStart.Add(time.Hour)); m = m.Add(time.Minute) {
		sum := w.mustPlan(m)
		if len(sum.Checks) >= 2 && m.After(recoveryStart) {
			return m, sum
		}
		w.run(m, -1, false)
	}
	w.tb.Fatal("no minute with two checks in the first hour")
	return time.Time{}, Summary{}
}

// planAndRun plans and runs minute and returns the reason of each check
// planned, by server id.
func (w *dirWorld) planAndRun(minute time.Time) map[string]string {
	w.tb.Helper()
	sum := w.mustPlan(minute)
	w.run(minute, -1, false)
	got := map[string]string{}
	for _, c := range sum.Checks {
		got[c.ID] = c.Reason
	}
	return got
}

// TestRecovery: a check planned and not done (a run killed before it
// started it, a plan file that cannot be read, a plan killed between the
// ledger and the plan file) is owed again at once, in the next minute
// planned after its own began, not at its next slot an hour later; a
// check whose run is still going is not.
func TestRecovery(t *testing.T) {
	t.Run("S4_killed_run_redone_next_minute", func(t *testing.T) {
		w := mustDirWorld(t)
		m, _ := w.busyMinute()
		_, lost := w.run(m, 1, false) // killed after its first check
		got := w.planAndRun(m.Add(time.Minute))
		for _, c := range lost {
			if reason, ok := got[c.ID]; !ok || reason != data.ReasonRoutine {
				t.Errorf("%s, not started by the killed run of %s: planned in the next minute %v (%s), want routine",
					c.ID, m.Format("15:04"), ok, reason)
			}
		}
		sum := w.mustPlan(m.Add(2 * time.Minute))
		for _, c := range sum.Checks {
			for _, l := range lost {
				if c.ID == l.ID {
					t.Errorf("%s planned a third time at %s though its second check ran", c.ID, c.At)
				}
			}
		}
	})

	t.Run("S4_live_run_not_redone", func(t *testing.T) {
		w := mustDirWorld(t)
		m, _ := w.busyMinute()
		j, going := w.run(m, 0, true) // in flight: nothing done yet
		sum := w.mustPlan(m.Add(time.Minute))
		for _, c := range sum.Checks {
			for _, g := range going {
				if c.ID == g.ID {
					t.Errorf("%s planned again while the run of %s is going", c.ID, m.Format("15:04"))
				}
			}
		}
		w.run(m.Add(time.Minute), -1, false)
		j.Close() // the run dies: its checks are lost
		sum = w.mustPlan(m.Add(2 * time.Minute))
		if sum.Again != len(going) {
			t.Errorf("after the run died: %d checks planned again, want %d (%s)", sum.Again, len(going), sum)
		}
	})

	t.Run("S4_unreadable_plan_redone_next_minute", func(t *testing.T) {
		w := mustDirWorld(t)
		m, sum := w.busyMinute()
		if err := os.WriteFile(data.Dir(w.cfg.Data).Plan(m), []byte("{\"at\": garbage\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if checks, bad, err := spool.ReadPlan(w.cfg.Data, m); err != nil || len(checks) != 0 || len(bad) != 1 {
			t.Fatalf("the damaged plan reads back %d checks, %d bad lines (%v), want 0 and its one line named", len(checks), len(bad), err)
		}
		got := w.planAndRun(m.Add(time.Minute))
		for _, c := range sum.Checks {
			if _, ok := got[c.ID]; !ok {
				t.Errorf("%s of the unreadable plan of %s not planned again in the next minute", c.ID, m.Format("15:04"))
			}
		}
	})

	t.Run("S4_not_run_before_a_ledger_rebuild_redone_next_minute", func(t *testing.T) {
		w := mustDirWorld(t)
		m, sum := w.busyMinute() // planned, never run
		if err := os.WriteFile(data.Dir(w.cfg.Data).Ledger(), []byte("PDLEDGER damaged"), 0o644); err != nil {
			t.Fatal(err)
		}
		next := w.mustPlan(m.Add(time.Minute))
		got := map[string]bool{}
		for _, c := range next.Checks {
			got[c.ID] = true
		}
		for _, c := range sum.Checks {
			if !got[c.ID] {
				t.Errorf("%s, planned at %s and never run, not planned again after the ledger was rebuilt", c.ID, c.At.Format("15:04:05"))
			}
		}
	})

	t.Run("S3_plan_killed_between_ledger_and_plan", func(t *testing.T) {
		w := mustDirWorld(t)
		m, _ := w.busyMinute()
		w.run(m, -1, false)
		killed := errors.New("killed")
		w.cfg.writePlan = func(string, time.Time, []data.PlannedCheck) error { return killed }
		// Plan minutes until one with checks is "killed" after its ledger.
		next := m.Add(time.Minute)
		var lostIDs []string
		for ; next.Before(m.Add(time.Hour)); next = next.Add(time.Minute) {
			_, err := w.plan(next)
			if !errors.Is(err, killed) {
				t.Fatalf("plan %s: %v, want the injected kill", next, err)
			}
			l, err := spool.ReadLedger(w.cfg.Data)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range l.Servers {
				if e.Planned >= next.Unix() {
					lostIDs = append(lostIDs, e.ID)
				}
			}
			if len(lostIDs) > 0 {
				break
			}
		}
		if len(lostIDs) == 0 {
			t.Fatal("no check planned while the plan was killed")
		}
		if _, _, err := spool.ReadPlan(w.cfg.Data, next); !errors.Is(err, spool.ErrNoPlan) {
			t.Fatalf("plan file of the killed plan: %v", err)
		}
		w.cfg.writePlan = nil
		after := next.Add(time.Minute)
		sum := w.mustPlan(after)
		got := map[string]bool{}
		for _, c := range sum.Checks {
			got[c.ID] = true
			if c.At.Unix() < after.Unix() {
				t.Errorf("%s planned at %s, before its minute", c.ID, c.At)
			}
		}
		for _, id := range lostIDs {
			if !got[id] {
				t.Errorf("%s, in the ledger but not the plan of the killed %s, not planned in %s", id, next.Format("15:04"), after.Format("15:04"))
			}
		}
		l, err := spool.ReadLedger(w.cfg.Data)
		if err != nil {
			t.Fatal(err)
		}
		for h, starts := range l.Hosts {
			for _, s := range starts {
				if s.Unix() >= next.Unix() && s.Unix() < after.Unix() {
					t.Errorf("host %s still counts a start at %s of the plan never written (rule S3 counts what runs)", h, time.Unix(s.Unix(), 0).UTC())
				}
			}
		}
	})
}

// TestClockBack: a clock stepped back says so in plain words, and a minute
// it asks for that was never planned is planned (rule S9: never in the
// past, but checks go on); one planned before is left as it is.
func TestClockBack(t *testing.T) {
	w := mustDirWorld(t)
	for m := recoveryStart; m.Before(recoveryStart.Add(10 * time.Minute)); m = m.Add(time.Minute) {
		w.mustPlan(m)
		w.run(m, -1, false)
	}
	t.Run("S9_step_back_1h_plans_the_minute_never_planned", func(t *testing.T) {
		back := recoveryStart.Add(-50 * time.Minute)
		sum := w.mustPlan(back)
		if !sum.ClockBack || sum.Kept || !strings.Contains(sum.String(), "the clock went backwards") ||
			!strings.Contains(sum.String(), "never planned, so it is planned now") {
			t.Errorf("after a step back of 1 h: %q", sum)
		}
		if _, _, err := spool.ReadPlan(w.cfg.Data, back); err != nil {
			t.Errorf("no plan of %s for the run: %v", back.Format("15:04"), err)
		}
		l, err := spool.ReadLedger(w.cfg.Data)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := time.Unix(l.LastMinute, 0).UTC(), recoveryStart.Add(9*time.Minute); !got.Equal(want) {
			t.Errorf("ledger's last minute %s, want it kept at %s", got, want)
		}
		if _, err := w.plan(back.Add(time.Minute)); err != nil {
			t.Errorf("the next minute after the step: %v", err)
		}
	})
	t.Run("S9_step_back_to_a_minute_run_says_so", func(t *testing.T) {
		sum := w.mustPlan(recoveryStart.Add(5 * time.Minute))
		if !sum.Kept || !strings.Contains(sum.String(), "the clock went backwards") || !strings.Contains(sum.String(), "left as it is") {
			t.Errorf("step back to a minute planned: %q", sum)
		}
	})
}

// TestRecoveryNewServerCountedAgain: a new server's
// first check lost with its run is planned again as a new server's (rule
// S5 keeps its place ahead of retries and routine checks), and the plan's
// summary counts it among the checks planned again.
func TestRecoveryNewServerCountedAgain(t *testing.T) {
	w := mustDirWorld(t)
	w.mustPlan(recoveryStart)
	w.run(recoveryStart, -1, false)
	fresh := data.Server{ID: "fresh", Rank: 201, URL: "https://fresh.example/mcp", Added: recoveryStart.Add(30 * time.Second)}
	var buf bytes.Buffer
	if err := lists.WriteServers(&buf, append(w.servers, fresh)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.cfg.Servers, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for m := recoveryStart.Add(time.Minute); m.Before(recoveryStart.Add(time.Hour)); m = m.Add(time.Minute) {
		if got := w.planAndRunOr(m, "fresh"); got == nil {
			continue
		} else {
			sum := w.mustPlan(m.Add(time.Minute))
			reason := ""
			for _, c := range sum.Checks {
				if c.ID == fresh.ID {
					reason = c.Reason
				}
			}
			if reason != data.ReasonNew || sum.Again != len(got) || sum.New < 1 || !strings.Contains(sum.String(), fmt.Sprintf(", %d again", len(got))) {
				t.Errorf("after the run of %s died: fresh planned %q, %d again (want %d): %s", m.Format("15:04"), reason, sum.Again, len(got), sum)
			}
			return
		}
	}
	t.Fatal("the new server was not planned within the hour")
}

// planAndRunOr plans minute; when its plan holds the check of id, the run
// dies before starting any check and the checks lost are returned, else
// the minute runs whole and nil is returned.
func (w *dirWorld) planAndRunOr(minute time.Time, id string) []data.PlannedCheck {
	w.tb.Helper()
	sum := w.mustPlan(minute)
	for _, c := range sum.Checks {
		if c.ID == id {
			_, lost := w.run(minute, 0, false)
			return lost
		}
	}
	w.run(minute, -1, false)
	return nil
}
