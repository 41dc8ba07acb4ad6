package planner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
)

// Config is what PlanMinute reads and writes: the one code path of `plan`
// from cron and of `run -loop`.
type Config struct {
	Servers string    // ranked list CSV
	Paused  string    // paused list file; "" for none
	Data    string    // data directory
	Minute  time.Time // minute to plan; zero: the next whole minute

	// FirstCheckSoon checks the servers listed at the first plan, never
	// checked, as soon as the host caps allow instead of at their slot
	// (Input.FirstCheckSoon): for a fresh deployment that wants a complete
	// site today.
	FirstCheckSoon bool

	// AcceptShrink takes a ranked list that lost more than
	// lists.DefaultMaxShrink of the last good list's servers at once.
	AcceptShrink bool

	// FetchPaused, when set, brings a paused list kept elsewhere (GitHub)
	// up to date in the data directory and returns the local file to read
	// instead of Paused. Its error stops the plan (rule R2: no plan
	// without the paused list).
	FetchPaused func(ctx context.Context) (string, error)

	Now    func() time.Time // nil means time.Now
	Logger *slog.Logger     // nil means no logs

	// writePlan writes the plan file after the ledger; nil means
	// spool.WritePlan. Tests make it fail, as a plan killed in between.
	writePlan func(dir string, minute time.Time, checks []data.PlannedCheck) error
}

// Time returns the time now: Now's, or time.Now's when Now is nil. Every
// reading of the clock for a plan goes through it (as crypto/tls's
// Config.time), cmd/plan's too.
func (c Config) Time() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

// NextMinute returns the minute to plan: Minute, or when it is zero the
// next whole minute of Time.
func (c Config) NextMinute() time.Time {
	if !c.Minute.IsZero() {
		return c.Minute.UTC()
	}
	return c.Time().UTC().Truncate(time.Minute).Add(time.Minute)
}

func (c Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// Summary says what PlanMinute did; String says it in words, a clock that
// went backwards included.
type Summary struct {
	Report
	Path string // the plan file written
	// Kept is set when the minute was planned before a later one: its
	// plan was left as it is and Report is empty.
	Kept bool
	// Ledger is the latest minute the ledger holds, when later than
	// Minute; ClockBack says Minute was the clock's next minute: the clock
	// went backwards. A minute never planned is then planned all the same.
	Ledger    time.Time
	ClockBack bool
}

// clockWords says in plain words what a clock that went backwards does.
func (s Summary) clockWords() string {
	what := "it was never planned, so it is planned now and checks go on"
	if s.Kept {
		what = "it was planned (and run) before, so it is left as it is; checks go on with the first minute never planned, " +
			s.Ledger.Add(time.Minute).Format(time.RFC3339) + " at the latest"
	}
	return fmt.Sprintf("the clock went backwards: plans were made up to %s, %s ahead of the minute the clock asks for, %s: %s",
		s.Ledger.Format(time.RFC3339), s.Ledger.Sub(s.Minute), s.Minute.Format(time.RFC3339), what)
}

// String is the line plan prints about its minute.
func (s Summary) String() string {
	if s.Kept && s.ClockBack {
		return s.clockWords()
	}
	if s.Kept {
		return fmt.Sprintf("%s already planned (the ledger is at %s): plan left as it is",
			s.Minute.Format(time.RFC3339), s.Ledger.Format(time.RFC3339))
	}
	line := ""
	if s.ClockBack {
		line = s.clockWords() + "\n"
	}
	again := ""
	if s.Again > 0 {
		again = fmt.Sprintf(", %d again", s.Again) // of the checks counted before, those lost and planned again
	}
	line += fmt.Sprintf("%s: %s (%d new, %d retry, %d routine)%s, %d deferred, longest wait %s -> %s",
		s.Minute.Format(time.RFC3339), data.Plural(len(s.Checks), "check"), s.New, s.Retry, s.Routine, again, s.Deferred, s.Longest, s.Path)
	switch {
	case s.First && s.Waiting > 0:
		line += fmt.Sprintf("\nfirst plan of this data directory: %d listed servers wait for their first check at their own slot "+
			"(rules S1, S2: within the hour for the top %d, within the day for the rest, later on hosts beyond their caps), "+
			"the first at %s, the last at %s; "+
			"plan -first-check-soon checks them as soon as the host caps allow",
			s.Waiting, data.HourlyTierMaxRank, s.FirstWait.Format(time.RFC3339), s.LastWait.Format(time.RFC3339))
	case s.Waiting > 0:
		line += fmt.Sprintf("; %d servers wait for their first check, the next at %s", s.Waiting, s.FirstWait.Format(time.RFC3339))
	}
	return line
}

// PlanMinute plans one minute of cfg.Data: it takes the plans' lock, reads
// the ranked list, the paused list and the ledger side by side (a damaged
// ledger is kept aside and rebuilt), plans (Planner.Plan, reading the
// states of only the servers it looks at), then writes the ledger and the
// plan file. Planning a minute already planned before a later one leaves
// its plan as it is (Summary.Kept). Any error leaves the plans as they
// were.
func PlanMinute(ctx context.Context, cfg Config) (Summary, error) {
	logger := cfg.logger()
	minute := cfg.NextMinute()
	sum := Summary{Report: Report{Minute: minute}}
	unlock, err := spool.LockPlans(cfg.Data)
	if err != nil {
		return sum, err
	}
	defer unlock()
	if err := ctx.Err(); err != nil {
		return sum, err
	}
	began := time.Now()
	in, err := load(ctx, cfg, logger)
	loaded := time.Now()
	if err != nil {
		return sum, fmt.Errorf("plan %s: %w", minute.Format(time.RFC3339), err)
	}
	neverPlanned := false
	if in.ledger.LastMinute > minute.Unix() {
		sum.Ledger = time.Unix(in.ledger.LastMinute, 0).UTC()
		// The clock's own next minute, behind the ledger: the clock went
		// backwards (an -at of an earlier minute is the operator's).
		sum.ClockBack = minute.Equal(cfg.Time().UTC().Truncate(time.Minute).Add(time.Minute))
		if _, err := os.Stat(data.Dir(cfg.Data).Plan(minute)); err == nil {
			sum.Kept = true
			return sum, nil
		}
		// Never planned, so never run: plan it, and checks go on.
		neverPlanned = sum.ClockBack
	}
	repairLedger(cfg.Data, minute, in.ledger, logger)
	// The runs going are read before the states: a run that ends in
	// between has its results in its journal by then.
	running, err := spool.LiveRuns(cfg.Data)
	if err != nil {
		return sum, fmt.Errorf("plan %s: %w", minute.Format(time.RFC3339), err)
	}
	p := Planner{Now: cfg.Time, Logger: logger}
	rep, err := p.Plan(minute, Input{
		Servers:        in.servers,
		Paused:         in.paused,
		Running:        running,
		NeverPlanned:   neverPlanned,
		FirstCheckSoon: cfg.FirstCheckSoon,
		StatesOf: func(ids []string) (map[string]data.State, error) {
			return loadStates(cfg.Data, ids, cfg.Time(), logger)
		},
	}, in.ledger)
	if err != nil {
		return sum, err
	}
	logUnmatched(in.paused.Name, rep.PausedUnmatched, logger)
	sum.Report = rep
	sum.First = rep.First && !in.rebuilt // a rebuilt ledger starts afresh, the data directory does not
	planned := time.Now()
	// The ledger first: should we die between the two, the checks are
	// counted but not run, which spares the hosts; the other way round they
	// would run uncounted. The next plan repairs it (repairLedger).
	if err := spool.WriteLedger(cfg.Data, in.ledger); err != nil {
		return sum, err
	}
	writePlan := cfg.writePlan
	if writePlan == nil {
		writePlan = spool.WritePlan
	}
	if err := writePlan(cfg.Data, minute, rep.Checks); err != nil {
		return sum, err
	}
	sum.Path = data.Dir(cfg.Data).Plan(minute)
	logger.Info("plan timings", "servers", len(in.servers), "load", loaded.Sub(began), "plan", planned.Sub(loaded), "write", time.Since(planned))
	return sum, nil
}

// repairLedger takes back the ledger's last minute when its plan file was
// never written (a plan killed between the ledger and the plan file): its
// checks, counted but never to run, are owed again in minute, and their
// starts no longer count toward the host caps.
func repairLedger(dir string, minute time.Time, l *spool.Ledger, logger *slog.Logger) {
	last := l.LastMinute
	if last == 0 || last >= minute.Unix() {
		return
	}
	if _, err := os.Stat(data.Dir(dir).Plan(time.Unix(last, 0))); !errors.Is(err, os.ErrNotExist) {
		return
	}
	takeBack(l, last)
	logger.Warn("the plan of the ledger's last minute was never written (plan stopped between the ledger and the plan file): its checks are planned again",
		"minute", time.Unix(last, 0).UTC().Format(time.RFC3339), "plan", data.Dir(dir).Plan(time.Unix(last, 0)))
}

// ReadPaused reads the paused list (rule R1): a local file, its last good
// copy in the data directory dir standing when it cannot be read or a line
// does not parse (rule R2), or, when remote, the copy FetchPaused keeps of
// a list on GitHub. With no good copy at all it is an error, so no plan is
// made without it. "" means no paused list.
func ReadPaused(dir, path string, remote bool, logger *slog.Logger) (lists.PausedList, error) {
	if path == "" {
		return lists.PausedList{}, nil
	}
	if remote {
		return lists.ReadPausedList(path)
	}
	list, stale, err := lists.LoadPausedList(dir, path)
	if stale != nil {
		logger.Warn("paused list not taken", "err", stale)
	}
	return list, err
}

// PausedIDs returns the ids of the listed servers the paused list names,
// logging the entries that name none.
func PausedIDs(p lists.PausedList, servers []data.Server, logger *slog.Logger) map[string]bool {
	if len(p.Entries) == 0 {
		return nil
	}
	ids, unmatched := p.Match(servers)
	logUnmatched(p.Name, unmatched, logger)
	return ids
}

// logUnmatched logs the entries of the paused list name that name no
// listed server: a typo in a pull request pauses nothing.
func logUnmatched(name string, unmatched []lists.PausedEntry, logger *slog.Logger) {
	for _, e := range unmatched {
		logger.Info("paused list names no listed server", "line", fmt.Sprintf("%s:%d", name, e.Line), "entry", e.Value)
	}
}

// ReadServers reads the ranked list, held by guard to the last good one
// kept in the data directory (a zero guard reads it unguarded), logging each
// bad row and one line counting them. A list refused stands aside for the
// last good one; with none it is an error. The same bad rows are logged
// once a day (lists.ListRowsToSay), not every minute. Servers whose address cannot be
// checked are listed (the site shows them not_checkable) but not planned.
func ReadServers(path string, guard lists.ListGuard, now time.Time, logger *slog.Logger) ([]data.Server, error) {
	servers, bad, stale, err := guard.Read(path)
	sum := lists.SummarizeRows(path, servers, bad)
	if lists.ListRowsToSay(guard.Dir, bad, sum, now) { // once a day while they stay
		for _, b := range bad {
			logger.Warn("bad row of the ranked list", "err", b)
		}
		if sum != "" {
			logger.Log(context.Background(), lists.SummaryLevel(bad), sum)
		}
	}
	if stale != nil {
		logger.Error("ranked list not taken", "err", stale)
	}
	return slices.DeleteFunc(servers, func(s data.Server) bool { return s.BadAddress != "" }), err
}

// inputs is everything one plan reads.
type inputs struct {
	servers []data.Server
	paused  lists.PausedList
	ledger  *spool.Ledger
	rebuilt bool // the ledger was damaged and rebuilt from the plans
}

// load reads the inputs of a plan side by side: at a million servers the
// list takes a good part of the second a plan may take. The states are read
// by the planner (Input.StatesOf), only those of the servers it looks at.
func load(ctx context.Context, cfg Config, logger *slog.Logger) (inputs, error) {
	var in inputs
	var wg sync.WaitGroup
	errs := make([]error, 3)
	wg.Go(func() {
		t := time.Now()
		in.servers, errs[0] = ReadServers(cfg.Servers, lists.ListGuard{Dir: cfg.Data, Accept: cfg.AcceptShrink}, cfg.Time(), logger)
		logger.Info("read ranked list", "took", time.Since(t))
	})
	wg.Go(func() {
		path := cfg.Paused
		if cfg.FetchPaused != nil {
			if path, errs[1] = cfg.FetchPaused(ctx); errs[1] != nil {
				return
			}
		}
		in.paused, errs[1] = ReadPaused(cfg.Data, path, cfg.FetchPaused != nil, logger)
	})
	wg.Go(func() {
		t := time.Now()
		in.ledger, in.rebuilt, errs[2] = readLedger(cfg, logger)
		logger.Info("read ledger", "took", time.Since(t))
	})
	wg.Wait()
	return in, errors.Join(errs...)
}

// loadStates reads the states of the servers of ids (nil: every one) at
// now (the time of a state set aside when damaged), logging each bad
// journal line.
func loadStates(dir string, ids []string, now time.Time, logger *slog.Logger) (map[string]data.State, error) {
	t := time.Now()
	states, bad, err := history.LoadStatesOf(dir, ids, now)
	logger.Info("load states", "took", time.Since(t), "states", len(states))
	for _, b := range bad {
		logger.Warn("skipped a bad result", "err", b)
	}
	return states, err
}

// readLedger reads the ledger; a damaged one is kept aside and made again
// from the plans of the last day (spool.RebuildLedger), so that the hosts'
// recent checks still count and planning goes on. The caller holds the
// plans' lock.
func readLedger(cfg Config, logger *slog.Logger) (*spool.Ledger, bool, error) {
	l, err := spool.ReadLedger(cfg.Data)
	if !errors.Is(err, spool.ErrLedgerCorrupt) {
		return l, false, err
	}
	aside, rerr := spool.KeepLedgerAside(cfg.Data, ".corrupt-"+cfg.Time().UTC().Format("20060102T150405"))
	if rerr != nil {
		return nil, false, errors.Join(err, rerr)
	}
	l, bad := spool.RebuildLedger(cfg.Data, cfg.NextMinute())
	logger.Error("ledger damaged: kept aside and rebuilt from the plans of the last 24 h", "err", err, "aside", aside,
		"servers", len(l.Servers), "hosts", len(l.Hosts))
	for _, b := range bad {
		logger.Warn("skipped a damaged plan while rebuilding the ledger", "err", b)
	}
	return l, true, nil
}
