package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
	"plug.directory/prober/data/spool"
)

// DefaultConcurrency is how many checks may be in flight at once when
// Config.Concurrency is zero. A check is mostly waiting on the network, so
// hundreds at once cost little; the bound keeps file descriptors in check.
// At 1,000 checks a minute that all take the full 45 s, 750 are in flight:
// the bound leaves room for that, so slow servers never delay starts.
const DefaultConcurrency = 1024

// Checker runs one planned check. Like the check of runner/check, it
// returns a full result whatever the server does. The runner then sets the
// fields it knows better: planned and actual start, lateness, end and
// duration, and the plan's id, address, host and reason when left empty.
type Checker interface {
	Check(ctx context.Context, c data.PlannedCheck) data.Result
}

// CheckerFunc turns a function into a Checker.
type CheckerFunc func(ctx context.Context, c data.PlannedCheck) data.Result

// Check calls f.
func (f CheckerFunc) Check(ctx context.Context, c data.PlannedCheck) data.Result { return f(ctx, c) }

// Config configures a run. Its zero value plus Dir and Checker is a
// production run.
type Config struct {
	Dir         string        // data directory: plans/, journal/, state/, results/, run/
	Checker     Checker       // runs one check
	Concurrency int           // most checks in flight at once; 0 means DefaultConcurrency
	Grace       time.Duration // after ctx is done, how long checks in flight may go on before they are cancelled and recorded as interrupted; 0 means data.CheckTimeout + 5 s
	Clock       Clock         // nil means SystemClock
	Logger      *slog.Logger  // nil means no logs
	PID         int           // names the journal and the minute marker; 0 means os.Getpid()

	// Fold folds the journals at the end of the run; nil means history.Fold.
	Fold func(dir string, now time.Time, logger *slog.Logger) (history.FoldStats, error)
	// Compact then compacts the history as of now; nil means
	// CompactHistory.
	Compact func(dir string, now time.Time, logger *slog.Logger) error
}

// PartsPerCompaction is how many parts (one per run) a day gathers before
// CompactHistory merges them: about an hour of runs.
const PartsPerCompaction = 60

// CompactHistory is what a run does after its fold: it compacts the days
// before now's into one file each (history.Compact) and merges today's parts
// once there are PartsPerCompaction of them (history.CompactParts), so a day
// stays a few files for DuckDB and the publisher; then it scrubs the next
// slice of the history (history.Scrub).
func CompactHistory(dir string, now time.Time, logger *slog.Logger) error {
	if _, err := history.Compact(dir, now, logger); err != nil {
		return err
	}
	if _, err := history.CompactParts(dir, now, PartsPerCompaction, logger); err != nil {
		return err
	}
	// A file of the history and its second copy a minute, and up to
	// history.ScrubBytes more, in turn: a damaged one is restored before a
	// reader needs it, at a cost that does not grow with the history.
	_, err := history.Scrub(dir, now, logger)
	return err
}

// Validate reports the first thing wrong with c.
func (c Config) Validate() error {
	switch {
	case c.Dir == "":
		return errors.New("run: no data directory")
	case c.Checker == nil:
		return errors.New("run: no checker")
	case c.Concurrency < 0:
		return fmt.Errorf("run: concurrency %d below zero", c.Concurrency)
	case c.Grace < 0:
		return fmt.Errorf("run: grace %v below zero", c.Grace)
	}
	return nil
}

func (c *Config) defaults() {
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Grace == 0 {
		c.Grace = data.CheckTimeout + 5*time.Second
	}
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.PID == 0 {
		c.PID = os.Getpid()
	}
	if c.Fold == nil {
		c.Fold = history.Fold
	}
	if c.Compact == nil {
		c.Compact = CompactHistory
	}
}

// Summary says what one run did.
type Summary struct {
	Minute      time.Time            // the minute run
	Planned     int                  // checks in its plan
	Completed   int                  // checks whose results were journaled (one result per server at the address)
	Outcomes    map[data.Outcome]int // completed checks per outcome
	Checks      map[CheckKind]int    // completed checks per outcome and why they were planned
	Lateness    []time.Duration      // start lateness of each completed check, in the order they ended
	Interrupted int                  // checks cancelled at shutdown (see data.Dir.Interrupted)
	NotStarted  int                  // checks not started because the run was stopped
	MaxLateness time.Duration        // latest start after its planned second
	P99Lateness time.Duration        // 99th percentile of start lateness
	Journal     string               // the run's journal file
	Fold        history.FoldStats
}

// CheckKind sorts a run's completed checks for its metrics: the outcome,
// and why the check was planned (data.ReasonNew, ReasonRetry, ReasonRoutine).
type CheckKind struct {
	Status data.Outcome
	Reason string
}

// Run runs the plan of minute (truncated to the minute, UTC). It reads the
// plan, claims the minute (ErrMinuteTaken when it was already run), starts
// each check at its planned second or later, never earlier, with at most
// cfg.Concurrency in flight and at least data.HostMinSpacing between two
// starts on one host across every run sharing cfg.Dir (rule S9), journals
// each result the moment its check ends, and finally folds the journals
// into the history and the state.
//
// When ctx is done, no further check starts; checks in flight have
// cfg.Grace to finish, then are cancelled and recorded as interrupted. A Go
// error means the run could not go on (no plan, a journal that cannot be
// written); a failing server is a result, not an error.
func Run(ctx context.Context, cfg Config, minute time.Time) (Summary, error) {
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	cfg.defaults()
	minute = minute.UTC().Truncate(time.Minute)
	sum := Summary{Minute: minute}
	checks, bad, err := spool.ReadPlan(cfg.Dir, minute)
	for _, b := range bad {
		cfg.Logger.Warn("skipped a bad line of the plan", "err", b)
	}
	if errors.Is(err, spool.ErrNoPlan) {
		hint := "plan writes it: plan -at " + minute.Format("2006-01-02T15:04")
		if !cfg.Clock.Now().Before(minute) {
			hint = "none can be written now: the minute has begun, and plan plans only minutes to come"
		}
		return sum, fmt.Errorf("run minute %s: %w (%s)", minute.Format("2006-01-02 15:04"), err, hint)
	}
	if err != nil {
		return sum, fmt.Errorf("run minute %s: %w", minute.Format("2006-01-02 15:04"), err)
	}
	sum.Planned = len(checks)
	if err := claimMinute(cfg.Dir, minute, cfg.Clock.Now(), cfg.PID); err != nil {
		return sum, err
	}
	starts, err := openStartLog(cfg.Dir, cfg.Clock)
	if err != nil {
		return sum, err
	}
	defer starts.close()
	j, err := spool.CreateJournal(cfg.Dir, data.RunJournal(minute, cfg.PID))
	if err != nil {
		return sum, err
	}
	sum.Journal = j.Path()
	cfg.Logger.Info("run started", "minute", minute.Format(time.RFC3339), "checks", len(checks), "journal", j.Path())

	r := &run{cfg: cfg, starts: starts, journal: j, sem: make(chan struct{}, cfg.Concurrency), outcomes: map[data.Outcome]int{}, kinds: map[CheckKind]int{},
		began: readLap(cfg.Clock, cfg.Clock.Now())}
	r.dispatch(ctx, checks)
	runErr := r.err
	if err := j.Close(); err != nil && runErr == nil {
		runErr = err
	}
	sum.Completed, sum.Interrupted, sum.NotStarted = r.completed, r.interrupted, r.notStarted
	sum.Outcomes, sum.Checks, sum.Lateness = r.outcomes, r.kinds, r.lateness
	sum.MaxLateness, sum.P99Lateness = latenessStats(r.lateness)
	if runErr != nil {
		return sum, runErr
	}
	// Fold even when stopping: what this run journaled is durable either
	// way, and folding now spares the next run the work.
	st, err := cfg.Fold(cfg.Dir, cfg.Clock.Now(), cfg.Logger)
	sum.Fold = st
	if err != nil {
		return sum, fmt.Errorf("run minute %s: %w", minute.Format("2006-01-02 15:04"), err)
	}
	// Past days are complete: their parts become one file each. A failure
	// loses nothing (the parts stay) and the next run tries again.
	if err := cfg.Compact(cfg.Dir, cfg.Clock.Now(), cfg.Logger); err != nil {
		cfg.Logger.Error("compaction failed", "err", err)
	}
	cfg.Logger.Info("run done", "minute", minute.Format(time.RFC3339), "completed", sum.Completed,
		"interrupted", sum.Interrupted, "not_started", sum.NotStarted,
		"p99_lateness", sum.P99Lateness, "max_lateness", sum.MaxLateness)
	return sum, nil
}

// run is the state of one Run while its checks go.
type run struct {
	cfg     Config
	starts  *startLog
	journal *spool.Journal
	sem     chan struct{}
	began   lap // when the run began: lateness is measured from it on the monotonic clock

	mu          sync.Mutex
	err         error // first error that stopped the run
	stop        context.CancelFunc
	completed   int
	interrupted int
	notStarted  int
	lateness    []time.Duration
	outcomes    map[data.Outcome]int
	kinds       map[CheckKind]int
}

// dispatch starts each check at its second and waits for them all.
func (r *run) dispatch(ctx context.Context, checks []data.PlannedCheck) {
	slices.SortStableFunc(checks, func(a, b data.PlannedCheck) int { return a.At.Compare(b.At) })
	// soft ends the starting of checks: shutdown, or an error that stops
	// the run. hard is what checks in flight see: it ends Grace later.
	soft, stop := context.WithCancel(ctx)
	defer stop()
	r.stop = stop
	hard, cancelHard := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHard()
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case <-soft.Done():
		}
		wait, cancelWait := context.WithCancel(context.Background())
		go func() { <-done; cancelWait() }()
		if r.cfg.Clock.Sleep(wait, r.cfg.Grace) == nil {
			r.cfg.Logger.Warn("grace over: cancelling checks in flight", "grace", r.cfg.Grace)
			cancelHard()
		}
	}()

	var wg sync.WaitGroup
	// Checks of one host start in plan order: each waits for the one
	// planned before it to have started (or given up).
	last := map[string]chan struct{}{}
	for i, c := range checks {
		if err := SleepUntil(soft, r.cfg.Clock, c.At); err != nil {
			r.count(func() { r.notStarted += len(checks) - i })
			break
		}
		if c.Host == "" {
			c.Host = data.HostOf(c.URL)
		}
		prev, turn := last[c.Host], make(chan struct{})
		if c.Host != "" {
			last[c.Host] = turn
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.one(soft, hard, c, prev, turn)
		}()
	}
	wg.Wait()
	close(done)
}

// one waits for its turn on its host (prev closed), a slot and the host's
// spacing, runs one check and records its result. It closes turn once the
// check has started or given up, so the host's next check may go.
func (r *run) one(soft, hard context.Context, c data.PlannedCheck, prev, turn chan struct{}) {
	passed := false
	pass := func() {
		if !passed {
			passed = true
			close(turn)
		}
	}
	defer pass()
	if prev != nil {
		select {
		case <-prev:
		case <-soft.Done():
			r.count(func() { r.notStarted++ })
			return
		}
	}
	select {
	case r.sem <- struct{}{}:
	case <-soft.Done():
		r.count(func() { r.notStarted++ })
		return
	}
	defer func() { <-r.sem }()
	start, ok := r.waitHost(soft, c.Host)
	if !ok {
		return
	}
	late := r.startLateness(c, readLap(r.cfg.Clock, start))
	pass()
	res := r.cfg.Checker.Check(hard, c)
	res.Stamp(c, start, r.cfg.Clock.Now(), late)
	if res.ProberFault {
		// Rule N11: the prober's own failure is never a
		// server's. Nothing is recorded; the run stops (every further check
		// would fail alike) and the planner owes the checks again.
		r.count(func() { r.notStarted++ })
		r.fail(fmt.Errorf("check %s (%s): %s: the prober's own failure, not recorded against the server", c.ID, c.URL, res.Detail))
		return
	}
	if hard.Err() != nil {
		r.recordInterrupted(res)
		return
	}
	for _, res := range c.Results(res) { // one result per server listed at the address
		if err := r.journal.Append(res); err != nil {
			r.fail(err)
			return
		}
	}
	r.count(func() {
		r.completed++
		r.lateness = append(r.lateness, res.Lateness)
		r.outcomes[res.Status]++
		r.kinds[CheckKind{res.Status, res.Reason}]++
	})
	r.cfg.Logger.Debug("check done", "id", res.ID, "status", res.Status, "lateness", res.Lateness, "took", res.Duration)
}

// waitHost waits until the start log grants host a start and returns the
// start; false when the run stops first. A check without a host (no
// address) needs no spacing.
func (r *run) waitHost(soft context.Context, host string) (time.Time, bool) {
	if host == "" {
		return r.cfg.Clock.Now(), true
	}
	for {
		ok, at, err := r.starts.tryStart(host)
		if err != nil {
			r.fail(err) // without the start log the spacing cannot be kept
			r.count(func() { r.notStarted++ })
			return time.Time{}, false
		}
		if ok {
			return at, true
		}
		if err := SleepUntil(soft, r.cfg.Clock, at); err != nil {
			r.count(func() { r.notStarted++ })
			return time.Time{}, false
		}
	}
}

// startLateness returns how late a check starting at now starts after its
// planned second, on the monotonic clock from when the run began: a wall
// clock stepped back mid-run delays every start, which the wall clock
// alone would not see. (A step forward makes it less than the wall
// clock's lateness, which then stands: lateness is never understated.)
func (r *run) startLateness(c data.PlannedCheck, now lap) time.Duration {
	return now.since(r.began) - c.At.Sub(r.began.wall)
}

// count updates the run's counters.
func (r *run) count(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
}

// fail records the first error that stops the run and stops starting checks.
func (r *run) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
		r.cfg.Logger.Error("run stops", "err", err)
		r.stop()
	}
}

// interruptedRecord is one line of data.Dir.Interrupted.
type interruptedRecord struct {
	Interrupted time.Time   `json:"interrupted"`
	Result      data.Result `json:"result"`
}

// recordInterrupted appends a check cancelled at shutdown, bounded, to
// data.Dir.Interrupted.
func (r *run) recordInterrupted(res data.Result) {
	r.count(func() { r.interrupted++ })
	r.cfg.Logger.Warn("check interrupted at shutdown", "id", res.ID, "url", res.URL)
	res.Bound() // as the journal records it: one hostile answer cannot grow the file without bound
	line, err := json.Marshal(interruptedRecord{Interrupted: r.cfg.Clock.Now().UTC(), Result: res})
	if err != nil {
		r.fail(fmt.Errorf("record interrupted check %s: %w", res.ID, err))
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := appendInterrupted(data.Dir(r.cfg.Dir).Interrupted(), line); err != nil {
		r.cfg.Logger.Error("record interrupted check", "id", res.ID, "err", err)
	}
}

// interruptedMax bounds the record of interrupted checks: past it, the
// file is moved to NAME.1 (replacing the one before) and a new one begun,
// so the two hold at most twice this and a line.
const interruptedMax = 1 << 20

// appendInterrupted appends line and a newline to the record at path,
// fsynced, moving the record aside first when it holds interruptedMax.
func appendInterrupted(path string, line []byte) error {
	if fi, err := os.Stat(path); err == nil && fi.Size() >= interruptedMax {
		if err := os.Rename(path, path+".1"); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// latenessStats returns the largest and the 99th percentile lateness.
func latenessStats(ls []time.Duration) (maxL, p99 time.Duration) {
	if len(ls) == 0 {
		return 0, 0
	}
	s := slices.Clone(ls)
	slices.Sort(s)
	return s[len(s)-1], s[(len(s)*99+99)/100-1]
}
