package soak

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/internal/testutil"
	"plug.directory/prober/planner"
	"plug.directory/prober/runner"
	"plug.directory/prober/runner/check"
	"plug.directory/prober/site"
)

var days = flag.Int("soak.days", 0, "days to simulate; 0 means 10 (2 with -short); make soak gives 120")

// checked is one check as the run made it and as the table wants it.
type checked struct {
	id        string
	started   time.Time
	want, got data.Outcome
	requests  int // what the result says it sent
}

// soak is the state of one run of the table.
type soak struct {
	t        *testing.T
	run      run
	clock    *testutil.JumpClock
	dir      string // the data directory
	list     string // servers.csv
	pausedTo string // paused.txt
	out      string // the site
	servers  []*scripted
	checker  runner.Checker
	quiet    *slog.Logger

	mu      sync.Mutex
	checks  []checked
	planned map[string]int // planned checks by server

	costs []dayCost
	today *dayCost
	feeds map[string]map[string]time.Time // by server: feed entry id -> its date, every entry ever published
	last  time.Time                       // the previous checkpoint's publish
}

// TestSoak runs the table's servers through simulated days of the
// prober's minutes and holds the site to the table at checkpoints (weekly,
// at each month's first minute and at the end): see soak.checkpoint. Per
// day it measures the bytes on disk and what plan, run and publish cost,
// and fails when a cost grows with the age of the data (see costGrowth).
func TestSoak(t *testing.T) {
	n, start := 10, time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC) // across a month's end
	switch {
	case *days > 0:
		n, start = *days, time.Date(2026, 11, 15, 0, 0, 0, 0, time.UTC) // 120 days: to 2027-03-15, across four month ends and a year's
	case testing.Short():
		n, start = 2, time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC) // across a year's end
	}
	// The long run's servers are of the hourly tier, as the top of the
	// list; the short runs' of the daily tier, which go test can afford.
	s := newSoak(t, run{start: start, length: time.Duration(n) * 24 * time.Hour, hourly: *days > 0})
	s.minutes()
	s.report()
	s.costGrowth()
}

func newSoak(t *testing.T, r run) *soak {
	root := testutil.MemTempDir(t) // months of fsyncs would take hours on a disk
	s := &soak{t: t, run: r, clock: testutil.NewJumpClock(r.start.Add(-time.Minute)),
		dir: filepath.Join(root, "data"), list: filepath.Join(root, "servers.csv"), pausedTo: filepath.Join(root, "paused.txt"),
		out: filepath.Join(root, "out"), quiet: slog.New(slog.DiscardHandler), planned: map[string]int{}, feeds: map[string]map[string]time.Time{}}
	var lab check.Lab
	s.servers, lab = fleetOf(t, r, s.clock.Now)
	real, err := runner.NewChecker(check.Config{Lab: lab, Now: s.clock.Now, Logger: s.quiet})
	if err != nil {
		t.Fatal(err)
	}
	s.checker = runner.CheckerFunc(func(ctx context.Context, c data.PlannedCheck) data.Result {
		at := s.clock.Now() // the runner stamps the result with it (Result.Stamp)
		res := real.Check(ctx, c)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.checks = append(s.checks, checked{id: c.ID, started: at, want: s.want(c.ID, at), got: res.Status, requests: res.Requests})
		return res
	})
	return s
}

// want is the status the table gives server id at t.
func (s *soak) want(id string, t time.Time) data.Outcome {
	for _, sv := range s.servers {
		if sv.life.id == id {
			return outcome(s.run.phaseAt(sv.life, t).kind)
		}
	}
	s.t.Errorf("a check of %s, which the table does not hold", id)
	return ""
}

// writeLists writes the ranked and the paused list as the table has them
// at t.
func (s *soak) writeLists(t time.Time) {
	var servers []data.Server
	var paused []byte
	for i, sv := range s.servers {
		l := sv.life
		if !s.run.listedAt(l, t) {
			continue
		}
		added := s.run.start.Add(-30 * 24 * time.Hour)
		for _, sp := range l.listed {
			if !t.Before(s.run.at(sp.from)) && sp.from > 0 {
				added = s.run.at(sp.from)
			}
		}
		rank := i + 1
		if !s.run.hourly {
			rank += data.HourlyTierMaxRank
		}
		servers = append(servers, data.Server{ID: l.id, Rank: rank, URL: sv.url(), Added: added})
		if s.run.pausedAt(l, t) {
			paused = append(paused, l.id+"\n"...)
		}
	}
	f, err := os.Create(s.list)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := lists.WriteServers(f, servers); err != nil {
		s.t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(s.pausedTo, paused, 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// minutes runs the prober's minutes from the start to the end of the run:
// each minute that has work is planned, run and published as cron's
// minute.sh does, and the minutes between are skipped, as cron would run
// them empty. A minute has work when a check falls due in it (the ledger's
// next due), the lists change, or a day begins.
func (s *soak) minutes() {
	end := s.run.start.Add(s.run.length)
	events := s.run.events()
	checkpoints := s.checkpoints()
	for m := s.run.start; m.Before(end); {
		if s.today == nil || !m.Before(s.today.day.Add(24*time.Hour)) {
			s.newDay(m.Truncate(24 * time.Hour))
		}
		s.clock.Set(m.Add(-30 * time.Second))
		s.writeLists(m)
		var sum planner.Summary
		s.today.plan.measure(func() {
			var err error
			sum, err = planner.PlanMinute(s.t.Context(), planner.Config{Servers: s.list, Paused: s.pausedTo, Data: s.dir, Minute: m,
				Now: s.clock.Now, Logger: s.quiet, AcceptShrink: true})
			if err != nil {
				s.t.Fatalf("plan %s: %v", m, err)
			}
		})
		for _, c := range sum.Checks {
			s.planned[c.ID]++
		}
		if len(sum.Checks) > 0 {
			s.clock.Set(m.Add(-time.Second))
			s.today.run.measure(func() {
				if _, err := runner.Run(s.t.Context(), runner.Config{Dir: s.dir, Checker: s.checker, Clock: s.clock, Logger: s.quiet, PID: 4242}, m); err != nil {
					s.t.Fatalf("run %s: %v", m, err)
				}
			})
			s.today.checks += len(sum.Checks)
		}
		s.clock.Set(m.Add(55 * time.Second))
		s.today.publish.measure(func() {
			if _, err := site.Publish(s.t.Context(), s.siteConfig(s.out, s.dir)); err != nil {
				s.t.Fatalf("publish %s: %v", m, err)
			}
		})
		if checkpoints[m] {
			s.checkpoint(m)
		}
		if s.t.Failed() {
			s.t.FailNow() // the first minute that goes wrong is the one to read
		}
		m = s.next(m, end, events)
	}
}

func (s *soak) siteConfig(out, dir string) site.Config {
	return site.Config{Contact: "probe@example.org", DataDir: dir, ServersPath: s.list, PausedPath: s.pausedTo, OutDir: out,
		Now: s.clock.Now, Logger: s.quiet, Workers: 2, NoHTML: true}
}

// next returns the next minute with work after m: the next the ledger
// has a check due in, a change of the lists, or the next midnight. A
// server planned and not yet seen by a plan since makes it the next
// minute: its next due is known once the plan reads its result.
func (s *soak) next(m, end time.Time, events []time.Time) time.Time {
	next := m.Truncate(24 * time.Hour).Add(24 * time.Hour)
	l, err := spool.ReadLedger(s.dir)
	if err != nil {
		s.t.Fatalf("read the ledger after %s: %v", m, err)
	}
	for _, e := range l.Servers {
		if e.Planned > e.Seen {
			return m.Add(time.Minute)
		}
		if e.NextDue != 0 {
			next = earlier(next, e.NextDueTime().Truncate(time.Minute))
		}
	}
	for _, ev := range events {
		if ev.After(m) {
			next = earlier(next, ev)
		}
	}
	for cp := range s.checkpoints() {
		if cp.After(m) {
			next = earlier(next, cp)
		}
	}
	if next.Before(m.Add(time.Minute)) {
		return m.Add(time.Minute)
	}
	return next
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// checkpoints are the minutes the site is held to the table: every
// seventh day's first, each month's first (a month's and a year's end
// behind them), the run's first day's last and the run's last.
func (s *soak) checkpoints() map[time.Time]bool {
	end := s.run.start.Add(s.run.length)
	cps := map[time.Time]bool{s.run.start.Add(24*time.Hour - time.Minute): true, end.Add(-time.Minute): true}
	for d := s.run.start; d.Before(s.run.start.Add(s.run.length)); d = d.Add(24 * time.Hour) {
		if d.Day() == 1 || d.Sub(s.run.start)%(7*24*time.Hour) == 0 && d != s.run.start {
			cps[d] = true
		}
	}
	return cps
}
