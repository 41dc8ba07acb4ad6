package history

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/internal/durable"
)

// MergedKey is the key-value metadata of a compacted Parquet file that lists,
// one a line, the base names of every file merged into it, also those merged
// into the compacted files it merged. A file so listed is superseded: its
// rows are in the compacted file, so it is never read again, never written
// again by a fold, and removed by the next Compact.
const MergedKey = "plug.directory/merged"

// compactRowGroup bounds the rows of one row group of a compacted file: the
// writer holds a row group in memory until it is complete.
const compactRowGroup = 1 << 17

// mergedPrefix starts the names of compacted files: merged-000001.parquet,
// numbered upward within a day.
const mergedPrefix = "merged-"

// partition is what one day's directory holds.
type partition struct {
	live       []string        // files to read, sorted
	superseded []string        // files whose rows a live compacted file holds
	merged     map[string]bool // base names listed by the live compacted files
	bad        []error         // compacted files whose list cannot be read
	next       int             // number of the next compacted file
}

// scanPartition lists a day's Parquet files and sorts them into live and
// superseded by the lists the compacted ones carry.
func scanPartition(pdir string) (partition, error) {
	p := partition{merged: map[string]bool{}, next: 1}
	paths, err := filepath.Glob(filepath.Join(pdir, "*.parquet"))
	if err != nil {
		return p, fmt.Errorf("list %s: %w", pdir, err)
	}
	sort.Strings(paths)
	for _, path := range paths {
		name := filepath.Base(path)
		if !strings.HasPrefix(name, mergedPrefix) {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, mergedPrefix), ".parquet")); err == nil && n >= p.next {
			p.next = n + 1
		}
		list, err := mergedList(path)
		if err != nil {
			p.bad = append(p.bad, err)
			continue
		}
		for _, m := range list {
			p.merged[m] = true
		}
	}
	for _, path := range paths {
		if p.merged[filepath.Base(path)] {
			p.superseded = append(p.superseded, path)
		} else {
			p.live = append(p.live, path)
		}
	}
	return p, nil
}

// mergedList reads the MergedKey list of a compacted file (its footer only).
func mergedList(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read parquet %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read parquet %s: %w", path, err)
	}
	pf, err := parquet.OpenFile(f, fi.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("read parquet %s: %w", path, err)
	}
	v, ok := pf.Lookup(MergedKey)
	if !ok {
		return nil, fmt.Errorf("read parquet %s: compacted file without its %s list", path, MergedKey)
	}
	return strings.Fields(v), nil
}

// CompactStats says what one Compact did.
type CompactStats struct {
	Days    int     // day partitions compacted
	Files   int     // files merged
	Rows    int64   // rows written to compacted files
	Removed int     // superseded files removed
	Bad     []error // files left alone because they cannot be read, each named

	Recovered []error // damaged files set aside: restored from their second copy, or lost; each says which

	ToolDefsPruned int // tool definition sets no check listed for ToolDefsKeep, removed (PruneToolDefs)
}

// Compact merges the Parquet files of every day before the day of before
// (UTC) that has more than one readable file into one compacted file,
// merged-NNNNNN.parquet, without losing or duplicating a row, also across
// crashes: the compacted file is written atomically and lists in its
// metadata (MergedKey) every file it holds; only then are those files
// removed. A crash in between leaves files that readers and folds skip as
// superseded, and that the next Compact removes. A file that cannot be read
// is named in the stats, left in place and not merged. Compact takes the
// fold lock, so it never races a Fold.
func Compact(dir string, before time.Time, logger *slog.Logger) (CompactStats, error) {
	var st CompactStats
	unlock, err := durable.LockFile(data.Dir(dir).FoldLock())
	if err != nil {
		return st, err
	}
	defer unlock()
	limit := before.UTC().Format("2006-01-02")
	pdirs, err := data.Dir(dir).ResultDays()
	if err != nil {
		return st, fmt.Errorf("compact: %w", err)
	}
	for _, pdir := range pdirs {
		if data.DayOf(pdir) >= limit {
			continue
		}
		// A day already in one file costs a glob, not a footer read: this
		// runs after every minute's run, over the whole history.
		files, _ := filepath.Glob(filepath.Join(pdir, "*.parquet"))
		tmps, _ := filepath.Glob(filepath.Join(pdir, ".*.tmp-*"))
		if len(files) < 2 && len(tmps) == 0 {
			continue
		}
		if err := compactDay(pdir, 0, before, &st, logger); err != nil {
			return st, err
		}
	}
	if st.Days > 0 {
		// A past day was compacted: about once a day, the store of tool
		// definitions lets go of the sets no check lists any more.
		n, err := spool.PruneToolDefs(dir, before)
		if err != nil {
			return st, err
		}
		st.ToolDefsPruned = n
	}
	if st.Days > 0 || st.Removed > 0 {
		logger.Info("compacted history", "days", st.Days, "files", st.Files, "rows", st.Rows, "removed", st.Removed, "bad", len(st.Bad), "tool_defs_pruned", st.ToolDefsPruned)
	}
	return st, nil
}

// CompactParts merges the parts of the day of day (UTC), the small files
// each fold writes, into one compacted file once there are at least
// minParts of them, leaving the day's compacted files as they are. Run
// during the day, it keeps a partition to a few files at the cost of the
// new rows only; Compact merges them all once the day is over. Same
// guarantees and lock as Compact.
func CompactParts(dir string, day time.Time, minParts int, logger *slog.Logger) (CompactStats, error) {
	var st CompactStats
	pdir := data.Dir(dir).ResultDay(day)
	if parts, _ := filepath.Glob(filepath.Join(pdir, "part-*.parquet")); len(parts) < max(minParts, 2) {
		return st, nil
	}
	unlock, err := durable.LockFile(data.Dir(dir).FoldLock())
	if err != nil {
		return st, err
	}
	defer unlock()
	if err := compactDay(pdir, max(minParts, 2), day, &st, logger); err != nil {
		return st, err
	}
	if st.Days > 0 {
		logger.Info("compacted the day's parts", "day", day.UTC().Format("2006-01-02"), "files", st.Files, "rows", st.Rows)
	}
	return st, nil
}

// compactDay compacts one day's partition: every live file, or with
// minParts > 0 only its parts, and only when there are at least minParts.
func compactDay(pdir string, minParts int, now time.Time, st *CompactStats, logger *slog.Logger) error {
	// Temporary files of writes that a crash cut short: no one else writes
	// here while the fold lock is held.
	tmps, _ := filepath.Glob(filepath.Join(pdir, ".*.tmp-*"))
	for _, t := range tmps {
		os.Remove(t)
	}
	p, err := scanPartition(pdir)
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	st.Bad = append(st.Bad, p.bad...)
	// Open every live file first: a file that does not open is not merged.
	var inputs []*os.File
	var sizes []int64
	defer func() {
		for _, f := range inputs {
			f.Close()
		}
	}()
	var names []string
	live := p.live
	if minParts > 0 {
		live = slices.DeleteFunc(slices.Clone(live), func(path string) bool {
			return !strings.HasPrefix(filepath.Base(path), "part-")
		})
		if len(live) < minParts {
			live = nil
		}
	}
	// The data directory holds results/date=…/.
	dataDir := filepath.Dir(filepath.Dir(pdir))
	for _, path := range live {
		f, size, err := openParquet(path)
		if err != nil {
			// A damaged file is set aside and restored from its second
			// copy, or, when that is damaged too, left out: the day is not
			// merged again with it, nor the file reported every minute.
			f, size, err = recoverInput(dataDir, path, err, now, st, logger)
			if err != nil {
				continue
			}
		}
		inputs, sizes = append(inputs, f), append(sizes, size)
		names = append(names, filepath.Base(path))
	}
	for len(inputs) >= 2 {
		out := filepath.Join(pdir, fmt.Sprintf("%s%06d.parquet", mergedPrefix, p.next))
		rows, bad, err := mergeInto(out, inputs, sizes, names)
		if bad >= 0 {
			// A file that opened but does not read through is restored,
			// or left out, and the day merged again: nothing was replaced
			// yet.
			inputs[bad].Close()
			f, size, rerr := recoverInput(dataDir, inputs[bad].Name(), err, now, st, logger)
			if rerr == nil {
				inputs[bad], sizes[bad] = f, size
				continue
			}
			inputs = slices.Delete(inputs, bad, bad+1)
			sizes = slices.Delete(sizes, bad, bad+1)
			names = slices.Delete(names, bad, bad+1)
			continue
		}
		if err != nil {
			return fmt.Errorf("compact %s: %w", pdir, err)
		}
		// The parts go only once the compacted file reads back whole from
		// the disk and has its second copy.
		if err := copyVerified(out, replicaOf(dataDir, out)); err != nil {
			return fmt.Errorf("compact %s: %w", pdir, err)
		}
		st.Days++
		st.Files += len(inputs)
		st.Rows += rows
		for _, n := range names {
			p.superseded = append(p.superseded, filepath.Join(pdir, n))
			p.merged[n] = true // its copy goes now too, not at the next compaction
		}
		break
	}
	for _, path := range p.superseded {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("compact: %w", err)
		}
		st.Removed++
	}
	if len(p.superseded) > 0 {
		if err := durable.SyncDir(pdir); err != nil {
			return err
		}
	}
	return removeSupersededReplicas(dataDir, pdir, p.merged)
}

// removeSupersededReplicas removes the second copies of the files the
// live compacted files of pdir merged: also those whose part a crash
// removed before its copy.
func removeSupersededReplicas(dataDir, pdir string, merged map[string]bool) error {
	rdir := replicaOf(dataDir, pdir)
	copies, _ := filepath.Glob(filepath.Join(rdir, "*.parquet"))
	removed := false
	for _, c := range copies {
		if merged[filepath.Base(c)] {
			if err := os.Remove(c); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("compact: %w", err)
			}
			removed = true
		}
	}
	if removed {
		return durable.SyncDir(rdir)
	}
	return nil
}

// recoverInput restores the damaged input path of a compaction from its
// second copy and opens it again; a file that cannot be restored is named
// in st and the error returned.
func recoverInput(dataDir, path string, cause error, now time.Time, st *CompactStats, logger *slog.Logger) (*os.File, int64, error) {
	restored, err := recoverParquet(dataDir, path, cause, now)
	if errors.Is(cause, durable.ErrDamaged) {
		st.Recovered = append(st.Recovered, err)
	}
	if !restored {
		st.Bad = append(st.Bad, err)
		logger.Error("not compacting an unreadable file", "err", err)
		return nil, 0, err
	}
	logger.Warn("restored a damaged history file from its second copy", "err", err)
	return openParquet(path)
}

// mergeInto writes the rows of inputs into the compacted file out, whose
// MergedKey lists names and everything the compacted inputs merged. When an
// input cannot be read, bad is its index and nothing is written.
func mergeInto(out string, inputs []*os.File, sizes []int64, names []string) (rows int64, bad int, err error) {
	list := slices.Clone(names)
	for i, f := range inputs {
		if strings.HasPrefix(names[i], mergedPrefix) {
			more, err := mergedList(f.Name())
			if err != nil {
				return 0, i, err
			}
			list = append(list, more...)
		}
	}
	slices.Sort(list)
	list = slices.Compact(list)
	bad = -1
	err = writeAtomic(out, func(w io.Writer) error {
		pw := newHistoryWriter(w, parquet.MaxRowsPerRowGroup(compactRowGroup),
			parquet.KeyValueMetadata(MergedKey, strings.Join(list, "\n")))
		for i, f := range inputs {
			n, err := copyRows(pw.GenericWriter, f, sizes[i])
			rows += n
			if err != nil {
				if !errors.Is(err, errWrite) {
					bad = i
				}
				return err
			}
		}
		if err := pw.Close(); err != nil {
			return fmt.Errorf("%w: %w", errWrite, err)
		}
		return nil
	})
	return rows, bad, err
}

// errWrite marks a failure to write the compacted file, as opposed to one
// reading an input.
var errWrite = errors.New("write compacted file")

// openParquet opens a Parquet file and checks its footer and its SumKey.
// Errors of a file that does not check wrap errParquetDamaged.
func openParquet(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("read parquet %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkParquet(f, fi.Size())
	}
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("read parquet %s: %w", path, err)
	}
	return f, fi.Size(), nil
}

// checkParquet checks the footer and the SumKey of the history file of
// size bytes in r. Errors wrap errParquetDamaged.
func checkParquet(r io.ReaderAt, size int64) (err error) {
	defer func() {
		if p := recover(); p != nil { // parquet-go panics on some damaged input
			err = fmt.Errorf("%w: %v", errParquetDamaged, p)
		}
	}()
	pf, err := parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return fmt.Errorf("%w: %w", errParquetDamaged, err)
	}
	return verifyParquet(r, size, pf)
}

// copyRows streams the rows of one file into w, a batch at a time, so a
// day of any size compacts in little memory.
func copyRows(w *parquet.GenericWriter[ResultRow], f *os.File, size int64) (n int64, err error) {
	defer func() {
		if p := recover(); p != nil { // parquet-go panics on some damaged input
			err = fmt.Errorf("read parquet %s: %w: %v", f.Name(), errParquetDamaged, p)
		}
	}()
	pf, err := parquet.OpenFile(f, size)
	if err != nil {
		return 0, fmt.Errorf("read parquet %s: %w: %w", f.Name(), errParquetDamaged, err)
	}
	if parquet.EqualNodes(pf.Schema(), resultSchema) {
		return copyRawRows(w, pf, f.Name())
	}
	// An older schema: converted field by field, by name.
	r := parquet.NewGenericReader[ResultRow](pf)
	defer r.Close()
	buf := make([]ResultRow, 1024)
	for {
		k, rerr := r.Read(buf)
		if k > 0 {
			if _, err := w.Write(buf[:k]); err != nil {
				return n, fmt.Errorf("%w: %w", errWrite, err)
			}
			n += int64(k)
		}
		if errors.Is(rerr, io.EOF) {
			return n, nil
		}
		if rerr != nil {
			return n, fmt.Errorf("read parquet %s: %w: %w", f.Name(), errParquetDamaged, rerr)
		}
	}
}

// resultSchema is the schema of the files this version writes.
var resultSchema = parquet.SchemaOf(ResultRow{})

// copyRawRows copies the rows of a file of the current schema without
// decoding them into Go values: about twice as fast as going through
// ResultRow.
func copyRawRows(w *parquet.GenericWriter[ResultRow], pf *parquet.File, name string) (n int64, err error) {
	buf := make([]parquet.Row, 1024)
	for _, rg := range pf.RowGroups() {
		rows := rg.Rows()
		left := rg.NumRows()
		for {
			// No more rows asked for than the row group has left (one once
			// it has none, for rows the footer did not count): past the
			// last row, parquet-go tries each column's next page again for
			// every row of the buffer, and a part of one row read into
			// 1,024 decoded 1,023 headers of nothing a column.
			k, rerr := rows.ReadRows(buf[:max(1, min(int64(len(buf)), left))])
			left -= int64(k)
			if k > 0 {
				if _, err := w.WriteRows(buf[:k]); err != nil {
					rows.Close()
					return n, fmt.Errorf("%w: %w", errWrite, err)
				}
				n += int64(k)
			}
			if errors.Is(rerr, io.EOF) {
				break
			}
			if rerr != nil {
				rows.Close()
				return n, fmt.Errorf("read parquet %s: %w: %w", name, errParquetDamaged, rerr)
			}
		}
		if err := rows.Close(); err != nil {
			return n, fmt.Errorf("read parquet %s: %w: %w", name, errParquetDamaged, err)
		}
	}
	return n, nil
}

// writeAtomic is WriteFileAtomic for content too large to hold in memory:
// write streams it into the file.
func writeAtomic(path string, write func(io.Writer) error) error {
	if err := durable.ReplaceFile(path, 0o644, true, write); err != nil {
		return err
	}
	return durable.SyncDir(filepath.Dir(path))
}
