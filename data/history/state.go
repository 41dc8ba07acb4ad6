package history

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/internal/durable"
)

// maxDeltas is how many delta files pile up before a fold rewrites the
// snapshot: about an hour of runs.
const maxDeltas = 60

// deltaFile is one delta on disk.
type deltaFile struct {
	path string
	seq  uint64
}

// listDeltas returns the delta files under dir, by sequence number.
func listDeltas(dir string) ([]deltaFile, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "state", "delta-*.bin"))
	if err != nil {
		return nil, fmt.Errorf("list state deltas: %w", err)
	}
	var out []deltaFile
	for _, p := range paths {
		n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "delta-"), ".bin"), 10, 64)
		if err != nil {
			continue // not ours
		}
		out = append(out, deltaFile{path: p, seq: n})
	}
	slices.SortFunc(out, func(a, b deltaFile) int { return cmp.Compare(a.seq, b.seq) })
	return out, nil
}

func deltaPath(dir string, seq uint64) string {
	return filepath.Join(dir, "state", fmt.Sprintf("delta-%09d.bin", seq))
}

// stateView is the state as the snapshot and its deltas give it.
type stateView struct {
	states  map[string]data.State
	baseSeq uint64 // last delta the snapshot holds
	lastSeq uint64 // last delta applied
	deltas  int    // deltas applied
}

// selection is which states a read of the state returns.
type selection struct {
	keep func(id string) bool // nil: every one
	// ids, sorted, are those keep keeps, when a few: then of each state
	// file only the blocks that may hold them are read, and damage
	// elsewhere is left for a read of every state (a fold, a publish) to
	// find.
	ids []string
}

// readStates reads the snapshot and applies the deltas after it, in order;
// only the states sel selects. A fold that rewrites the snapshot meanwhile
// (removing deltas) makes it read again.
func readStates(dir string, sel selection) (stateView, error) {
	for attempt := 0; ; attempt++ {
		v, changed, err := readStatesOnce(dir, sel)
		if !changed {
			return v, err
		}
		if attempt == 10 {
			return v, err // a gap that stays: a delta was lost
		}
	}
}

// errStateGap is wrapped by the error of a state missing a delta, or
// missing altogether while the history holds results.
var errStateGap error = durable.DamagedError("state incomplete")

// readStatesOnce reads the state once. changed reports a delta missing
// under it, with err saying which.
func readStatesOnce(dir string, sel selection) (v stateView, changed bool, err error) {
	path := data.Dir(dir).State()
	before := fileID(path)
	v.baseSeq, v.states, err = readStateFileOf(path, "snapshot", sel)
	noSnapshot := errors.Is(err, os.ErrNotExist)
	switch {
	case noSnapshot:
		v.states = map[string]data.State{}
	case err != nil:
		return v, false, stateError(path, err)
	}
	v.lastSeq = v.baseSeq
	deltas, err := listDeltas(dir)
	if err != nil {
		return v, false, err
	}
	if noSnapshot && len(deltas) == 0 && hasHistory(dir) {
		// Lost, or not written yet by the first fold: a repair, under
		// the fold lock, tells which.
		return v, false, fmt.Errorf("read state: %w: no %s while %s holds results", errStateGap, path, data.Dir(dir).Results())
	}
	for _, d := range deltas {
		if d.seq <= v.baseSeq {
			continue // held by the snapshot; left by a rewrite cut short
		}
		if d.seq != v.lastSeq+1 {
			// A gap: the snapshot was rewritten meanwhile, or a delta lost.
			return v, true, fmt.Errorf("read state: %w: %s missing before %s", errStateGap, deltaPath(dir, v.lastSeq+1), d.path)
		}
		_, m, err := readStateFileOf(d.path, "delta", sel)
		if errors.Is(err, os.ErrNotExist) {
			return v, true, fmt.Errorf("read state: %w: %w", errStateGap, err)
		}
		if err != nil {
			return v, false, stateError(d.path, err)
		}
		maps.Copy(v.states, m)
		v.lastSeq = d.seq
		v.deltas++
	}
	// A snapshot rewritten meanwhile may have removed deltas not listed
	// yet, after the last one read: read again.
	if fileID(path) != before {
		return v, true, fmt.Errorf("read state %s: rewritten while read", path)
	}
	return v, false, nil
}

// stateError wraps err, of a read of the state file at path: a damaged
// file is named, as the errors of os.Open and of the read name it already.
func stateError(path string, err error) error {
	if errors.Is(err, durable.ErrDamaged) {
		return fmt.Errorf("read state %s: %w", path, err)
	}
	return fmt.Errorf("read state: %w", err)
}

// hasHistory reports whether the history holds a day.
func hasHistory(dir string) bool {
	days, _ := data.Dir(dir).ResultDays()
	return len(days) > 0
}

// fileKey identifies one version of a file.
type fileKey struct {
	ino   uint64
	mtime int64
}

// fileID identifies the file at path (inode and modification time), zero
// when there is none: a file replaced by rename gets another.
func fileID(path string) fileKey {
	fi, err := os.Stat(path)
	if err != nil {
		return fileKey{}
	}
	k := fileKey{mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		k.ino = st.Ino
	}
	return k
}

// writeDelta writes the states a fold changed as the next delta.
func writeDelta(dir string, seq uint64, m map[string]data.State) error {
	return durable.WriteFileAtomic(deltaPath(dir, seq), encodeStates(seq, m), 0o644)
}

// rewriteSnapshot folds the deltas into a new snapshot, then removes them.
// A crash in between leaves deltas the snapshot already holds, which
// readers skip by their sequence number.
func rewriteSnapshot(dir string) error {
	v, err := readStates(dir, selection{})
	if err != nil {
		return err
	}
	if err := durable.WriteFileAtomic(data.Dir(dir).State(), encodeStates(v.lastSeq, v.states), 0o644); err != nil {
		return err
	}
	deltas, err := listDeltas(dir)
	if err != nil {
		return err
	}
	for _, d := range deltas {
		if d.seq <= v.lastSeq {
			if err := os.Remove(d.path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("rewrite state: %w", err)
			}
		}
	}
	return durable.SyncDir(filepath.Dir(data.Dir(dir).State()))
}

// applyAll folds results into states, oldest start first, so that a failing
// streak keeps the start of its first failure whatever order the journals
// were read in.
func applyAll(states map[string]data.State, results []data.Result) {
	slices.SortStableFunc(results, func(a, b data.Result) int { return a.Started.Compare(b.Started) })
	for _, r := range results {
		s := states[r.ID]
		s.Apply(r)
		states[r.ID] = s
	}
}

// LoadStates returns every server's state: the snapshot with every journal
// applied, also those still being written by running processes, so that
// consecutive and overlapping runs see each other's results. Bad journal
// ScanLines are skipped and reported in bad, naming file:line; err is non-nil
// only when the snapshot or the journal directory cannot be read. A state
// damaged or lost is set aside and rebuilt from the history (RebuildState)
// before it is read, the rebuild reported in bad.
func LoadStates(dir string, now time.Time) (states map[string]data.State, bad []error, err error) {
	return loadStates(dir, selection{}, now)
}

// LoadStatesOf is LoadStates for the servers of ids (nil: every one): the
// others are neither returned nor given a map entry, and of the state
// files only the blocks that may hold ids are read and checked, so a reader
// that needs a few thousand of a million states (a plan, whose servers are
// mostly not due) reads a few megabytes, not a hundred. Damage in a block
// not read is found by the next read of every state, a fold's or a
// publish's. Every journal is still read, so its bad lines are reported as
// by LoadStates.
func LoadStatesOf(dir string, ids []string, now time.Time) (states map[string]data.State, bad []error, err error) {
	if ids == nil {
		return LoadStates(dir, now)
	}
	wanted := make(map[string]bool, len(ids))
	for _, id := range ids {
		wanted[id] = true
	}
	sorted := slices.Sorted(maps.Keys(wanted))
	if sorted == nil {
		sorted = []string{} // none, not every one
	}
	return loadStates(dir, selection{keep: func(id string) bool { return wanted[id] }, ids: sorted}, now)
}

// loadStates is LoadStates of the states sel selects.
func loadStates(dir string, sel selection, now time.Time) (states map[string]data.State, bad []error, err error) {
	keep := sel.keep
	journals, err := spool.ListJournals(dir, false)
	if err != nil {
		return nil, nil, err
	}
	var all []data.Result
	for _, j := range journals {
		rs, b, err := spool.ReadJournal(j.Path)
		if errors.Is(err, os.ErrNotExist) {
			continue // folded since it was listed: the snapshot read below has it
		}
		bad = append(bad, b...)
		if err != nil {
			bad = append(bad, err)
		}
		if keep != nil {
			rs = slices.DeleteFunc(rs, func(r data.Result) bool { return !keep(r.ID) })
		}
		all = append(all, rs...)
	}
	// The snapshot is read after the journals: a journal folded meanwhile is
	// then in the snapshot, and applying a result twice changes nothing.
	v, err := readStates(dir, sel)
	if errors.Is(err, durable.ErrDamaged) {
		// Derived data: set aside and rebuilt, reported in bad, and the
		// plan or publish goes on.
		report, rerr := repairState(dir, false, err, now)
		if rerr != nil {
			return nil, nil, rerr
		}
		bad = append(bad, report...)
		v, err = readStates(dir, sel)
	}
	states = v.states
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

// Fold moves the results of every finished journal into the state snapshot
// and the Parquet history, exactly once, then removes the journal. A journal
// that a live process still holds is left for a later fold. Overlapping
// calls are serialised by a lock file in dir.
func Fold(dir string, now time.Time, logger *slog.Logger) (FoldStats, error) {
	return fold(dir, maxDeltas, now, logger)
}

// fold is Fold rewriting the snapshot once there are maxDeltas deltas.
func fold(dir string, maxDeltas int, now time.Time, logger *slog.Logger) (FoldStats, error) {
	start := time.Now()
	var st FoldStats
	unlock, err := durable.LockFile(data.Dir(dir).FoldLock())
	if err != nil {
		return st, err
	}
	defer unlock()

	journals, err := spool.ListJournals(dir, true)
	if err != nil {
		return st, err
	}
	removeStaleNewJournals(dir, logger)
	// The first fold of a data directory writes the first history before
	// the first state: that state is then missing for a reason, not lost.
	first := !hasHistory(dir)
	var done, damaged []string // damaged: journals with lines that could not be read
	var all []data.Result
	for _, j := range journals {
		if j.Active {
			st.Active++
			continue
		}
		rs, bad, err := spool.ReadJournal(j.Path)
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
		if err := writeHistory(dir, j.Path, rs); err != nil {
			return st, fmt.Errorf("fold %s: %w", j.Path, err)
		}
		all = append(all, rs...)
		done = append(done, j.Path)
		if len(bad) > 0 {
			damaged = append(damaged, j.Path)
		}
		st.Results += len(rs)
	}
	if len(done) == 0 {
		st.Took = time.Since(start)
		return st, nil
	}
	// Only the servers with results are decoded and written: a fold costs
	// what the run did, not the size of the list. Every state file is still
	// read whole and checked, so damage that a plan's read of a few blocks
	// passed over is repaired here.
	needed := make(map[string]bool, len(all))
	for _, r := range all {
		needed[r.ID] = true
	}
	sel := selection{keep: func(id string) bool { return needed[id] }}
	v, err := readStates(dir, sel)
	if first && errors.Is(err, errStateGap) {
		if _, serr := os.Stat(data.Dir(dir).State()); errors.Is(serr, os.ErrNotExist) {
			if ds, derr := listDeltas(dir); derr == nil && len(ds) == 0 {
				v, err = stateView{states: map[string]data.State{}}, nil
			}
		}
	}
	if errors.Is(err, durable.ErrDamaged) {
		// The history just written holds these results: the rebuilt
		// state has them, and applying them again changes nothing.
		report, rerr := repairState(dir, true, err, now)
		if rerr != nil {
			return st, fmt.Errorf("fold: %w", rerr)
		}
		for _, r := range report {
			logger.Error("state damaged: set aside and rebuilt from the history", "err", r)
		}
		v, err = readStates(dir, sel)
	}
	if err != nil {
		return st, fmt.Errorf("fold: %w", err)
	}
	applyAll(v.states, all)
	if err := writeDelta(dir, v.lastSeq+1, v.states); err != nil {
		return st, fmt.Errorf("fold: %w", err)
	}
	// Only now, with history and state durable, may the journals go. One
	// with lines that could not be read is set aside rather than removed:
	// what it recorded is kept for inspection, never read again.
	for _, p := range done {
		if slices.Contains(damaged, p) {
			aside, err := setAside(dir, p, now)
			if err != nil {
				return st, fmt.Errorf("fold: %w", err)
			}
			logger.Warn("journal with damaged lines set aside after its good lines were folded", "journal", p, "aside", aside)
			continue
		}
		if err := os.Remove(p); err != nil {
			return st, fmt.Errorf("fold: remove journal: %w", err)
		}
	}
	if err := durable.SyncDir(data.Dir(dir).JournalDir()); err != nil {
		return st, fmt.Errorf("fold: %w", err)
	}
	if v.deltas+1 >= maxDeltas {
		if err := rewriteSnapshot(dir); err != nil {
			// Nothing is lost: the deltas stay and the next fold tries again.
			logger.Error("cannot rewrite the state snapshot", "err", err)
		}
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
	paths, _ := filepath.Glob(filepath.Join(data.Dir(dir).JournalDir(), ".*.new"))
	for _, p := range paths {
		if active, err := spool.JournalActive(p); err == nil && !active {
			if os.Remove(p) == nil {
				logger.Info("removed a journal never put in place", "path", p)
			}
		}
	}
}
