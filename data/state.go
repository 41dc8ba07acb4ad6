package data

import (
	"bufio"
	"encoding/gob"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// StatePath returns the snapshot of per-server state under the data
// directory dir: a compact binary file (see statefile.go), quick to read and
// write at a million servers, since every run's fold rewrites it and every
// plan and publish reads it. The Parquet history is the human-readable
// record; the snapshot can always be rebuilt from it.
func StatePath(dir string) string { return filepath.Join(dir, "state", "states.bin") }

// legacyStatePath is the gob snapshot of the first version, read when no
// binary snapshot exists yet.
func legacyStatePath(dir string) string { return filepath.Join(dir, "state", "states.gob") }

// readSnapshot reads the state snapshot; a missing one is an empty state.
func readSnapshot(dir string) (map[string]State, error) {
	path := StatePath(dir)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return readLegacySnapshot(dir)
	}
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	m, err := decodeStates(b)
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", path, err)
	}
	return m, nil
}

// readLegacySnapshot reads a gob snapshot; a missing one is an empty state.
func readLegacySnapshot(dir string) (map[string]State, error) {
	path := legacyStatePath(dir)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]State{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	defer f.Close()
	var list []State
	if err := gob.NewDecoder(bufio.NewReaderSize(f, 1<<20)).Decode(&list); err != nil {
		return nil, fmt.Errorf("read state %s: %w", path, err)
	}
	m := make(map[string]State, len(list))
	for _, s := range list {
		m[s.ID] = s
	}
	return m, nil
}

// writeSnapshot replaces the snapshot atomically.
func writeSnapshot(dir string, m map[string]State) error {
	return WriteFileAtomic(StatePath(dir), encodeStates(m), 0o644)
}

// applyAll folds results into states, oldest start first, so that a failing
// streak keeps the start of its first failure whatever order the journals
// were read in.
func applyAll(states map[string]State, results []Result) {
	slices.SortStableFunc(results, func(a, b Result) int { return a.Started.Compare(b.Started) })
	for _, r := range results {
		s := states[r.ID]
		s.Apply(r)
		states[r.ID] = s
	}
}

// LoadStates returns every server's state: the snapshot with every journal
// applied, also those still being written by running processes, so that
// consecutive and overlapping runs see each other's results. Bad journal
// lines are skipped and reported in bad, naming file:line; err is non-nil
// only when the snapshot or the journal directory cannot be read.
func LoadStates(dir string) (states map[string]State, bad []error, err error) {
	journals, err := listJournals(dir, false)
	if err != nil {
		return nil, nil, err
	}
	var all []Result
	for _, j := range journals {
		rs, b, err := ReadJournal(j.path)
		if errors.Is(err, os.ErrNotExist) {
			continue // folded since it was listed: the snapshot read below has it
		}
		bad = append(bad, b...)
		if err != nil {
			bad = append(bad, err)
		}
		all = append(all, rs...)
	}
	// The snapshot is read after the journals: a journal folded meanwhile is
	// then in the snapshot, and applying a result twice changes nothing.
	states, err = readSnapshot(dir)
	if err != nil {
		return nil, nil, err
	}
	applyAll(states, all)
	return states, bad, nil
}

// FoldStats says what one Fold did.
type FoldStats struct {
	Journals int           // journals folded
	Results  int           // results folded
	Active   int           // journals left alone because a run still writes them
	Bad      []error       // lines skipped, naming file:line
	Took     time.Duration // wall time
}

// lockFile takes an exclusive flock on path, waiting for it, and returns the
// function that releases it.
func lockFile(path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// Fold moves the results of every finished journal into the state snapshot
// and the Parquet history, exactly once, then removes the journal. A journal
// that a live process still holds is left for a later fold. Overlapping
// calls are serialised by a lock file in dir.
func Fold(dir string, logger *slog.Logger) (FoldStats, error) {
	start := time.Now()
	var st FoldStats
	unlock, err := lockFile(filepath.Join(dir, ".fold.lock"))
	if err != nil {
		return st, err
	}
	defer unlock()

	journals, err := listJournals(dir, true)
	if err != nil {
		return st, err
	}
	removeStaleNewJournals(dir, logger)
	states, err := readSnapshot(dir)
	if err != nil {
		return st, err
	}
	var done []string
	var all []Result
	for _, j := range journals {
		if j.active {
			st.Active++
			continue
		}
		rs, bad, err := ReadJournal(j.path)
		if err != nil {
			// Left in place for a later fold; the others go on.
			logger.Error("cannot fold a journal", "err", err)
			st.Bad = append(st.Bad, err)
			continue
		}
		for _, b := range bad {
			logger.Warn("skipped a bad journal line", "err", b)
		}
		st.Bad = append(st.Bad, bad...)
		if err := writeHistory(dir, j.path, rs); err != nil {
			return st, fmt.Errorf("fold %s: %w", j.path, err)
		}
		all = append(all, rs...)
		done = append(done, j.path)
		st.Results += len(rs)
	}
	if len(done) == 0 {
		st.Took = time.Since(start)
		return st, nil
	}
	applyAll(states, all)
	if err := writeSnapshot(dir, states); err != nil {
		return st, fmt.Errorf("fold: %w", err)
	}
	// Only now, with history and state durable, may the journals go.
	for _, p := range done {
		if err := os.Remove(p); err != nil {
			return st, fmt.Errorf("fold: remove journal: %w", err)
		}
	}
	if err := SyncDir(JournalDir(dir)); err != nil {
		return st, fmt.Errorf("fold: %w", err)
	}
	st.Journals = len(done)
	st.Took = time.Since(start)
	logger.Info("folded journals", "journals", st.Journals, "results", st.Results, "active", st.Active)
	return st, nil
}

// removeStaleNewJournals removes journals a run created but never renamed
// into place (it died between the two): they hold no result. One still
// locked is being created right now and is left alone.
func removeStaleNewJournals(dir string, logger *slog.Logger) {
	paths, _ := filepath.Glob(filepath.Join(JournalDir(dir), ".*.new"))
	for _, p := range paths {
		if active, err := journalActive(p); err == nil && !active {
			if os.Remove(p) == nil {
				logger.Info("removed a journal never put in place", "path", p)
			}
		}
	}
}
