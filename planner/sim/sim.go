package sim

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/planner"
)

// Sim runs the real planner minute by minute over a virtual clock and
// records what its checks would find as the runner does.
type Sim struct {
	// Dir, when set, is a data directory: every plan and every result is
	// written there as cmd/plan and the runner write them (a plan file a
	// minute, a journal a run, folded every FoldEvery), and at the end the
	// states loaded from it must equal the simulated ones. The ledger is
	// written and read back every FoldEvery (rather than every minute:
	// that would be most of the run's time) and must come back equal.
	// Empty keeps everything in memory.
	Dir       string
	FoldEvery time.Duration // 0 means every hour

	List   func(now time.Time) []data.Server   // the ranked list as of now
	Paused func(now time.Time) map[string]bool // the ids of the servers paused as of now (widened as lists.PausedList.Match does); nil: nothing paused
	// Check returns what a check finds: Status, Detail, RetryAfter,
	// Protocol, Transport and Duration; the rest is filled in as the runner
	// does.
	Check func(c data.PlannedCheck) data.Result
	// OnMinute, when set, is called after each minute is planned, with the
	// audit so far; an error stops the run.
	OnMinute func(rep planner.Report, a *Audit) error
	Logger   *slog.Logger

	Audit  *Audit
	Ledger *spool.Ledger
	States map[string]data.State

	pending  []data.Result // run, not yet visible: finished after the plan's clock
	journals chan journalBatch
	written  chan error // the journal writer's end, or its first error
}

// Run simulates the minutes from start (a whole minute) for d. Each minute
// is planned one minute ahead, as cron does, and sees the results of the
// checks that finished by then.
func (s *Sim) Run(ctx context.Context, start time.Time, d time.Duration) error {
	if s.Ledger == nil {
		s.Ledger = spool.NewLedger()
	}
	if s.States == nil {
		s.States = map[string]data.State{}
	}
	if s.Audit == nil {
		s.Audit = NewAudit(start)
	}
	foldEvery := cmp.Or(s.FoldEvery, time.Hour)
	lastFold := start
	if s.Dir != "" {
		// Results are written by a goroutine of their own, as the runner's
		// are, while the next minute is planned.
		s.journals = make(chan journalBatch, 16)
		s.written = make(chan error, 1)
		go s.writeJournals()
		defer s.closeJournals()
	}
	for T := start; T.Before(start.Add(d)); T = T.Add(time.Minute) {
		if err := ctx.Err(); err != nil {
			return err
		}
		now := T.Add(-time.Minute)
		s.settle(now)
		list := s.List(now)
		var paused map[string]bool
		if s.Paused != nil {
			paused = s.Paused(now)
		}
		p := planner.Planner{Now: func() time.Time { return now }, Logger: s.Logger}
		rep, err := p.Plan(T, planner.Input{Servers: list, Paused: pausedList(paused), States: s.States, Running: s.running()}, s.Ledger)
		if err != nil {
			return fmt.Errorf("simulate: %w", err)
		}
		s.Audit.Plan(now, list, paused, rep, s.Ledger)
		if err := s.run(T, rep.Checks); err != nil {
			return err
		}
		if s.Dir != "" && T.Sub(lastFold) >= foldEvery {
			if err := s.checkpoint(T); err != nil {
				return err
			}
			lastFold = T
		}
		if s.OnMinute != nil {
			if err := s.OnMinute(rep, s.Audit); err != nil {
				return err
			}
		}
	}
	s.settle(start.Add(d + time.Hour))
	if s.Dir == "" {
		return nil
	}
	end := start.Add(d + time.Hour)
	if err := s.checkpoint(end); err != nil {
		return err
	}
	stored, bad, err := history.LoadStates(s.Dir, end)
	if err != nil || len(bad) > 0 {
		return fmt.Errorf("simulate: load states: %v %v", err, bad)
	}
	if !maps.EqualFunc(stored, s.States, func(a, b data.State) bool {
		return a.ID == b.ID && a.URL == b.URL && a.LastCheck.Equal(b.LastCheck) && a.LastStatus == b.LastStatus &&
			a.FailingSince.Equal(b.FailingSince) && a.LastAnswered.Equal(b.LastAnswered) && a.RetryAfter.Equal(b.RetryAfter)
	}) {
		return fmt.Errorf("simulate: the states stored in %s differ from the simulated ones", s.Dir)
	}
	return nil
}

// pausedList returns a paused list naming each of ids, in their order.
func pausedList(ids map[string]bool) lists.PausedList {
	l := lists.PausedList{Name: "simulated paused list"}
	for k, id := range slices.Sorted(maps.Keys(ids)) {
		l.Entries = append(l.Entries, lists.PausedEntry{Line: k + 1, Value: id})
	}
	return l
}

func (s *Sim) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// run performs the minute's checks on time (rule S9) and keeps their
// results until they finish; with Dir, the plan, the ledger and the results
// are written as cmd/plan and the runner write them.
func (s *Sim) run(T time.Time, checks []data.PlannedCheck) error {
	results := make([]data.Result, 0, len(checks))
	for _, c := range checks {
		r := s.Check(c)
		r.ID, r.URL, r.Host, r.Reason = c.ID, c.URL, c.Host, c.Reason
		r.Planned, r.Started = c.At, c.At
		r.Finished = c.At.Add(r.Duration)
		r.ProberVersion = "simulated"
		results = append(results, c.Results(r)...)
	}
	s.pending = append(s.pending, results...)
	if s.Dir == "" {
		return nil
	}
	if err := spool.WritePlan(s.Dir, T, checks); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	select {
	case s.journals <- journalBatch{minute: T, results: results}:
		return nil
	case err := <-s.written:
		return err
	}
}

type journalBatch struct {
	minute  time.Time
	results []data.Result
	done    chan error // set for a flush: told when everything before it is written
}

// writeJournals appends each minute's results to a journal of its own, as
// a run of the runner does, until the channel closes or a write fails.
func (s *Sim) writeJournals() {
	var err error
	for b := range s.journals {
		if err == nil && b.done == nil {
			err = s.writeJournal(b.minute, b.results)
		}
		if b.done != nil {
			b.done <- err
		}
	}
	s.written <- err
}

func (s *Sim) writeJournal(minute time.Time, results []data.Result) error {
	j, err := spool.CreateJournal(s.Dir, data.SimJournal(minute))
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	for _, r := range results {
		if err := j.Append(r); err != nil {
			j.Close()
			return fmt.Errorf("simulate: %w", err)
		}
	}
	return j.Close()
}

// closeJournals stops the journal writer.
func (s *Sim) closeJournals() {
	if s.journals != nil {
		close(s.journals)
		<-s.written
		s.journals = nil
	}
}

// checkpoint waits for the results written so far, folds them at now, and writes
// the ledger and reads it back.
func (s *Sim) checkpoint(now time.Time) error {
	done := make(chan error, 1)
	select {
	case s.journals <- journalBatch{done: done}:
	case err := <-s.written:
		return err
	}
	if err := <-done; err != nil {
		return err
	}
	if _, err := history.Fold(s.Dir, now, s.logger()); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	if err := spool.WriteLedger(s.Dir, s.Ledger); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	back, err := spool.ReadLedger(s.Dir)
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	if !back.Equal(s.Ledger) {
		return fmt.Errorf("simulate: the ledger read back from %s differs from the one written", s.Dir)
	}
	return nil
}

// running returns the minutes whose run is still going, as spool.LiveRuns
// would find them: those with results still pending.
func (s *Sim) running() map[int64]bool {
	live := map[int64]bool{}
	for _, r := range s.pending {
		live[r.Planned.Truncate(time.Minute).Unix()] = true
	}
	return live
}

// settle applies the results finished by now, in the order they finished.
func (s *Sim) settle(now time.Time) {
	slices.SortStableFunc(s.pending, func(a, b data.Result) int { return a.Finished.Compare(b.Finished) })
	n := 0
	for _, r := range s.pending {
		if r.Finished.After(now) {
			break
		}
		st := s.States[r.ID]
		st.Apply(r)
		s.States[r.ID] = st
		s.Audit.Result(r)
		n++
	}
	s.pending = slices.Delete(s.pending, 0, n)
}
