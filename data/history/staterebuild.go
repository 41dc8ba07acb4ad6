package history

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// RebuildStats says what a rebuild of the state did.
type RebuildStats struct {
	Aside   string        // where the old state files were set aside; "" when there were none
	States  int           // states rebuilt
	Results int           // history rows read
	Files   int           // history files read
	Bad     []error       // history files that could not be read, each named (damaged ones set aside)
	Took    time.Duration // wall time
}

// RebuildState sets the state files of the data directory dir aside, under
// data.Dir.Damaged, and makes the state again from the Parquet history, the
// record it is derived from: each server's last outcome, failing streak,
// Retry-After hold and what it learned come back as the folds had made
// them. Unfolded journals are not in it; readers apply them as always. It
// takes the fold lock. Damaged history files are set aside and named in
// the stats; err is non-nil only when the history cannot be listed or the
// new state not written.
func RebuildState(dir string, now time.Time) (RebuildStats, error) {
	unlock, err := durable.LockFile(data.Dir(dir).FoldLock())
	if err != nil {
		return RebuildStats{}, err
	}
	defer unlock()
	return rebuildState(dir, now)
}

// repairState rebuilds a state found damaged (cause) unless, once the fold
// lock is held, it reads whole: another process repaired it meanwhile, or
// it was a first fold's state not written yet. held says the caller holds
// the lock. It returns the error to report for the repair, nil when none
// was made.
func repairState(dir string, held bool, cause error, now time.Time) (report []error, err error) {
	if !held {
		unlock, err := durable.LockFile(data.Dir(dir).FoldLock())
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	if _, err := readStates(dir, selection{keep: func(string) bool { return false }}); !errors.Is(err, durable.ErrDamaged) {
		return nil, err
	}
	st, err := rebuildState(dir, now)
	if err != nil {
		return nil, fmt.Errorf("rebuild state after %w: %w", cause, err)
	}
	aside := "no state file to set aside"
	if st.Aside != "" {
		aside = "state set aside in " + st.Aside
	}
	report = append(report, fmt.Errorf("%w; %s and rebuilt from the history: %d states from %d results in %d files, %s",
		cause, aside, st.States, st.Results, st.Files, st.Took.Round(time.Millisecond)))
	return append(report, st.Bad...), nil
}

// rebuildState is RebuildState with the fold lock held.
func rebuildState(dir string, now time.Time) (RebuildStats, error) {
	start := time.Now()
	var st RebuildStats
	states := map[string]data.State{}
	pdirs, err := data.Dir(dir).ResultDays()
	if err != nil {
		return st, fmt.Errorf("rebuild state: %w", err)
	}
	for _, pdir := range pdirs {
		p, err := scanPartition(pdir)
		if err != nil {
			return st, fmt.Errorf("rebuild state: %w", err)
		}
		st.Bad = append(st.Bad, p.bad...)
		// A day at a time, oldest first, each in start order: a failing
		// streak keeps its first failure.
		// Only the columns a state is made of are held: a day of a
		// million servers takes half the heap (580 MB, not 1.25 GB).
		var day []stateRow
		for _, f := range p.live {
			rows, err := readParquetRows[stateRow](f)
			if err != nil {
				restored, rerr := recoverParquet(dir, f, err, now)
				st.Bad = append(st.Bad, rerr)
				if restored {
					rows, err = readParquetRows[stateRow](f)
				}
				if err != nil {
					continue
				}
			}
			st.Files++
			st.Results += len(rows)
			day = append(day, rows...)
		}
		slices.SortStableFunc(day, func(a, b stateRow) int { return cmp.Compare(a.StartedAt, b.StartedAt) })
		for _, w := range day {
			r := w.result()
			s := states[r.ID]
			s.Apply(r)
			states[r.ID] = s
		}
	}
	deltas, err := listDeltas(dir)
	if err != nil {
		return st, err
	}
	var seq uint64
	if len(deltas) > 0 {
		seq = deltas[len(deltas)-1].seq
	}
	// The old snapshot goes first, then the new one is written holding
	// every delta by its number, then the deltas go: a reader meanwhile
	// finds a state incomplete and waits for the lock, and a crash at any
	// point leaves a state that is rebuilt again.
	aside := func(path string) error {
		to, err := setAside(dir, path, now)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err == nil && st.Aside == "" {
			st.Aside = filepath.Dir(to)
		}
		return err
	}
	if err := aside(data.Dir(dir).State()); err != nil {
		return st, fmt.Errorf("rebuild state: %w", err)
	}
	if err := durable.WriteFileAtomic(data.Dir(dir).State(), encodeStates(seq, states), 0o644); err != nil {
		return st, fmt.Errorf("rebuild state: %w", err)
	}
	for _, d := range deltas {
		if err := aside(d.path); err != nil {
			return st, fmt.Errorf("rebuild state: %w", err)
		}
	}
	if err := durable.SyncDir(filepath.Dir(data.Dir(dir).State())); err != nil {
		return st, fmt.Errorf("rebuild state: %w", err)
	}
	st.States = len(states)
	st.Took = time.Since(start)
	return st, nil
}

// stateRow is what State.Apply reads of a history row: the columns a
// rebuild reads.
type stateRow struct {
	ID         string `parquet:"id"`
	URL        string `parquet:"url"`
	Status     string `parquet:"status"`
	Detail     string `parquet:"detail"`
	Protocol   string `parquet:"protocol"`
	Transport  string `parquet:"transport"`
	StartedAt  int64  `parquet:"started_at,timestamp(millisecond)"`
	RetryAfter int64  `parquet:"retry_after,timestamp(millisecond),optional"`
}

// result returns the row as a Result of those fields, as ResultRow.Result.
func (w stateRow) result() data.Result {
	return data.Result{ID: w.ID, URL: w.URL, Status: data.Outcome(w.Status), Detail: w.Detail, Protocol: w.Protocol, Transport: w.Transport,
		Started: fromMillis(w.StartedAt), RetryAfter: fromMillis(w.RetryAfter)}
}
