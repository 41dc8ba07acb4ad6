package planner

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
)

// ErrPast is returned by Plan for a minute that has begun: a check is never
// planned in the past (rule S9).
var ErrPast = errors.New("the minute has begun: never plan in the past")

// ErrPlannedAfter is returned by Plan for a minute before the last one the
// ledger holds: its checks would be counted twice.
var ErrPlannedAfter = errors.New("a later minute is already planned")

const minute = 60 // seconds

// Planner plans one minute of checks at a time (rules S1-S9).
type Planner struct {
	Now    func() time.Time // nil means time.Now
	Logger *slog.Logger     // nil means no logs
}

// Input is what one plan is made from.
type Input struct {
	Servers []data.Server // the ranked list in its order (lists.SortServers)
	// Paused is the paused list (rule R1): the servers it names, by id or
	// by address, are not checked, nor any server at the address of one
	// named (rule S8), as lists.PausedList.Match names them.
	Paused lists.PausedList
	States map[string]data.State // what the runner learned, by server id
	// StatesOf, used when States is nil, reads the states of the servers
	// of ids (nil: every one), as history.LoadStatesOf. A plan looks at the
	// state of only the servers that may be owed a check, a few thousand of
	// a million, so it need not read the rest.
	StatesOf func(ids []string) (map[string]data.State, error)
	// Running holds the minutes (unix s) whose run is still going
	// (spool.LiveRuns), read before the states. A check planned in a
	// minute that has begun, with no result and no run going, was lost
	// (a killed run, a plan that could not be read or was never written)
	// and is owed again at once. nil: no run is going.
	Running map[int64]bool
	// FirstCheckSoon makes the servers listed at the first plan and never
	// checked due at once, placed as the host caps allow, rather than at
	// their slot (within the hour for the top 2,000, the day for the
	// rest). Servers listed later are new servers either way (rule S5).
	FirstCheckSoon bool
	// NeverPlanned lets Plan plan a minute before the ledger's last one
	// that was never planned (no plan file): the clock went backwards.
	// Nothing is taken back, and the later minutes' starts still count.
	NeverPlanned bool
}

// Report is one planned minute.
type Report struct {
	Minute   time.Time           // start of the minute planned
	Checks   []data.PlannedCheck // by start, then id
	New      int                 // checks of each reason (a routine check planned again is Routine)
	Retry    int
	Routine  int
	Again    int           // checks planned again, of any reason (also counted in New, Retry or Routine): planned before, lost with no result (see Input.Running)
	Deferred int           // checks due by the end of the minute that the host caps push to a later one (rule S4)
	Longest  time.Duration // longest wait of a deferred check so far
	Removed  int           // servers dropped from the ledger: no longer listed
	// Waiting counts the servers listed at the first plan, never checked,
	// that wait for their slot: from FirstWait to LastWait. First is set
	// for the first plan of a ledger.
	Waiting             int
	FirstWait, LastWait time.Time
	First               bool
	// PausedUnmatched holds the entries of Input.Paused that name no
	// listed server, in the list's order.
	PausedUnmatched []lists.PausedEntry
}

func (p *Planner) now() time.Time {
	if p.Now == nil {
		return time.Now()
	}
	return p.Now()
}

func (p *Planner) logger() *slog.Logger {
	if p.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Logger
}

// class is why a check is owed, in the order rule S4 places them: it
// carries the reason the plan file and the ledger record.
type class int8

const (
	classNew     class = iota // a new server's first check (rule S5)
	classRetry                // a failing server's retry (rule S6)
	classAgain                // a routine check planned before and lost: owed at once
	classRoutine              // the server's usual slot (rules S1, S2)
)

// code returns the reason the ledger records for a check of class c.
func (c class) code() spool.ReasonCode {
	switch c {
	case classNew:
		return spool.CodeNew
	case classRetry:
		return spool.CodeRetry
	default:
		return spool.CodeRoutine
	}
}

// The host index of a server that has no host to count on.
const (
	noHost       int32 = -1 // no address: the check concludes not_checkable without a connection
	pausedHost   int32 = -2 // paused (rule S8): not planned, not counted
	followerHost int32 = -3 // at an address another server leads (see sharing): not planned, not counted
)

// Plan plans the minute starting at at (a whole minute, after Now) and
// records it in the ledger l. Planning the last minute of the ledger again
// first takes back what that plan recorded, so the same inputs give the same
// plan. A minute before the ledger's last one is ErrPlannedAfter; a minute
// that has begun is ErrPast. l is unchanged on error, but for an error of
// in.StatesOf, after which l is to be read again.
//
// Its steps are those of one pass (see pass.run).
func (p *Planner) Plan(at time.Time, in Input, l *spool.Ledger) (Report, error) {
	start := at.Unix()
	rep := Report{Minute: at.UTC()}
	if start%minute != 0 || at.Nanosecond() != 0 {
		return rep, fmt.Errorf("plan %s: not a whole minute", at.UTC().Format(time.RFC3339Nano))
	}
	now := p.now()
	if !now.Before(at) {
		return rep, fmt.Errorf("plan %s: %w", at.UTC().Format(time.RFC3339), ErrPast)
	}
	if l.LastMinute > start && !in.NeverPlanned {
		return rep, fmt.Errorf("plan %s: %w (%s)", at.UTC().Format(time.RFC3339), ErrPlannedAfter,
			time.Unix(l.LastMinute, 0).UTC().Format(time.RFC3339))
	}
	if l.LastMinute == start {
		takeBack(l, start)
	}
	if l.Created == 0 {
		l.Created = start
	}
	rep.First = l.Created == start

	ps := pass{start: start, now: now.Unix(), in: in, l: l, rep: &rep}
	if err := ps.run(); err != nil {
		return rep, fmt.Errorf("plan %s: %w", at.UTC().Format(time.RFC3339), err)
	}
	p.logger().Info("planned", "minute", rep.Minute.Format(time.RFC3339), "checks", len(rep.Checks),
		"new", rep.New, "retry", rep.Retry, "routine", rep.Routine, "deferred", rep.Deferred,
		"longest_wait", rep.Longest, "removed", rep.Removed)
	return rep, nil
}
