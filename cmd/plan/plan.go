package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/pause"
	"plug.directory/prober/planner"
)

// loadPaused reads the paused list named by the -paused flag (rule R1):
// the local file (its last good copy standing when it cannot be read or a
// line does not parse, rule R2), or the copy fetchPaused keeps of a list on
// GitHub. With no good copy at all it is an error, so no plan is made
// without it. "" means no paused list.
func loadPaused(dir, source string, remote bool, logger *slog.Logger) (data.PausedList, error) {
	if source == "" {
		return data.PausedList{}, nil
	}
	if remote {
		return data.ReadPausedList(source)
	}
	list, stale, err := data.LoadPausedList(dir, source)
	if stale != nil {
		logger.Warn("paused list not taken", "err", stale)
	}
	return list, err
}

// fetchPaused brings a paused list kept on GitHub (-paused
// github:OWNER/REPO/PATH[@REF]) up to date in the data directory and returns
// the local copy to read. When GitHub fails, the last good copy stands and
// the failure is logged (rule R2); only with no good copy at all is it an
// error. The token of GITHUB_TOKEN, if set, goes to the GitHub API only.
func fetchPaused(ctx context.Context, cfg Config, logger *slog.Logger) (string, error) {
	spec, err := pause.ParseSpec(cfg.Paused)
	if err != nil {
		return "", err
	}
	client, err := pause.NewClient(cfg.GitHubAPI, os.Getenv(pause.TokenEnv), nil)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second) // the plan is due within its minute
	defer cancel()
	path, _, err := (&pause.Fetcher{Client: client, DataDir: cfg.Data, Logger: logger, Now: cfg.Now}).Fetch(ctx, spec)
	return path, err
}

// pausedIDs returns the ids of the listed servers the paused list names.
func pausedIDs(p data.PausedList, servers []data.Server, logger *slog.Logger) map[string]bool {
	if len(p.Entries) == 0 {
		return nil
	}
	ids, unmatched := p.Match(servers)
	for _, e := range unmatched {
		logger.Info("paused list names no listed server", "line", fmt.Sprintf("%s:%d", p.Name, e.Line), "entry", e.Value)
	}
	return ids
}

// readServers reads the ranked list, held by guard to the last good one
// kept in the data directory (a zero guard reads it unguarded), logging each
// bad row and one line counting them. A list refused stands aside for the
// last good one; with none it is an error. Servers whose address cannot be
// checked are listed (the site shows them not_checkable) but not planned.
func readServers(path string, guard data.ListGuard, logger *slog.Logger) ([]data.Server, error) {
	servers, bad, stale, err := guard.Read(path)
	for _, b := range bad {
		logger.Warn("bad row of the ranked list", "err", b)
	}
	if sum := data.SummarizeRows(path, len(servers), bad); sum != "" {
		logger.Warn(sum)
	}
	if stale != nil {
		logger.Error("ranked list not taken", "err", stale)
	}
	return slices.DeleteFunc(servers, func(s data.Server) bool { return s.BadAddress != "" }), err
}

// inputs is everything one plan reads.
type inputs struct {
	servers []data.Server
	paused  data.PausedList
	ledger  *data.Ledger
}

// load reads the inputs of a plan side by side: at a million servers the
// list takes a good part of the second a plan may take. The states are read
// by the planner (statesOf), only those of the servers it looks at.
func load(ctx context.Context, cfg Config, logger *slog.Logger) (inputs, error) {
	var in inputs
	var wg sync.WaitGroup
	errs := make([]error, 3)
	wg.Go(func() {
		t := time.Now()
		in.servers, errs[0] = readServers(cfg.Servers, data.ListGuard{Dir: cfg.Data, Accept: cfg.AcceptShrink}, logger)
		logger.Info("read ranked list", "took", time.Since(t))
	})
	wg.Go(func() {
		source := cfg.Paused
		if pause.IsSpec(source) {
			if source, errs[1] = fetchPaused(ctx, cfg, logger); errs[1] != nil {
				return
			}
		}
		in.paused, errs[1] = loadPaused(cfg.Data, source, pause.IsSpec(cfg.Paused), logger)
	})
	wg.Go(func() {
		t := time.Now()
		in.ledger, errs[2] = readLedger(cfg, logger)
		logger.Info("read ledger", "took", time.Since(t))
	})
	wg.Wait()
	return in, errors.Join(errs...)
}

// loadStates reads the states of the servers keep keeps (nil: every one),
// logging each bad journal line.
func loadStates(dir string, keep func(id string) bool, logger *slog.Logger) (map[string]data.State, error) {
	t := time.Now()
	states, bad, err := data.LoadStatesOf(dir, keep)
	logger.Info("load states", "took", time.Since(t), "states", len(states))
	for _, b := range bad {
		logger.Warn("skipped a bad result", "err", b)
	}
	return states, err
}

// readLedger reads the ledger; a damaged one is kept aside and made again
// from the plans of the last day (data.RebuildLedger), so that the hosts'
// recent checks still count and planning goes on. The caller holds the
// plans' lock.
func readLedger(cfg Config, logger *slog.Logger) (*data.Ledger, error) {
	l, err := data.ReadLedger(cfg.Data)
	if !errors.Is(err, data.ErrLedgerCorrupt) {
		return l, err
	}
	path := data.LedgerPath(cfg.Data)
	aside := path + ".corrupt-" + cfg.now().UTC().Format("20060102T150405")
	if rerr := os.Rename(path, aside); rerr != nil {
		return nil, errors.Join(err, rerr)
	}
	l, bad := data.RebuildLedger(cfg.Data, cfg.minute())
	logger.Error("ledger damaged: kept aside and rebuilt from the plans of the last 24 h", "err", err, "aside", aside,
		"servers", len(l.Servers), "hosts", len(l.Hosts))
	for _, b := range bad {
		logger.Warn("skipped a damaged plan while rebuilding the ledger", "err", b)
	}
	return l, nil
}

// planMinute plans one minute into DIR/plans and records it in the ledger.
// Planning a minute already planned before a later one leaves its plan as
// it is.
func planMinute(ctx context.Context, cfg Config, stdout io.Writer, logger *slog.Logger) error {
	minute := cfg.minute()
	unlock, err := data.LockPlans(cfg.Data)
	if err != nil {
		return err
	}
	defer unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	began := time.Now()
	in, err := load(ctx, cfg, logger)
	loaded := time.Now()
	if err != nil {
		return fmt.Errorf("plan %s: %w", minute.Format(time.RFC3339), err)
	}
	if in.ledger.LastMinute > minute.Unix() {
		if _, err := os.Stat(data.PlanPath(cfg.Data, minute)); err == nil {
			fmt.Fprintf(stdout, "%s already planned (the ledger is at %s): plan left as it is\n",
				minute.Format(time.RFC3339), time.Unix(in.ledger.LastMinute, 0).UTC().Format(time.RFC3339))
			return nil
		}
	}
	p := planner.Planner{Now: cfg.Now, Logger: logger}
	rep, err := p.Plan(minute, planner.Input{
		Servers: in.servers,
		Paused:  pausedIDs(in.paused, in.servers, logger),
		StatesOf: func(keep func(id string) bool) (map[string]data.State, error) {
			return loadStates(cfg.Data, keep, logger)
		},
	}, in.ledger)
	if err != nil {
		return err
	}
	planned := time.Now()
	// The ledger first: should we die between the two, the checks are
	// counted but not run, which spares the hosts; the other way round they
	// would run uncounted. Planning the minute again writes both.
	if err := data.WriteLedger(cfg.Data, in.ledger); err != nil {
		return err
	}
	if err := data.WritePlan(cfg.Data, minute, rep.Checks); err != nil {
		return err
	}
	logger.Info("plan timings", "servers", len(in.servers), "load", loaded.Sub(began), "plan", planned.Sub(loaded), "write", time.Since(planned))
	fmt.Fprintf(stdout, "%s: %d checks (%d new, %d retry, %d routine), %d deferred, longest wait %s -> %s\n",
		minute.Format(time.RFC3339), len(rep.Checks), rep.New, rep.Retry, rep.Routine, rep.Deferred, rep.Longest,
		data.PlanPath(cfg.Data, minute))
	return nil
}
