package history

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// ScrubBytes and ScrubFiles bound what one Scrub reads beyond its first
// file and that file's second copy, which it always reads: at most
// ScrubFiles files and their copies, while they hold under ScrubBytes. A
// call then costs the same whatever the history's age and size, and a
// round over the whole history takes as many calls as it has files over
// ScrubFiles, or its bytes over ScrubBytes when that is more (a year of a
// million servers' compacted days, 93 MB each: about 390 calls, six and a
// half hours of minutes; a year of 40 servers: about 55 calls).
const (
	ScrubBytes = 1 << 20
	ScrubFiles = 8
)

// ScrubStats says what one Scrub did.
type ScrubStats struct {
	Files    int           // files verified (a history file or its second copy)
	Bytes    int64         // bytes they hold
	Read     int64         // bytes read to verify them (the footers and every page)
	Total    int64         // bytes of the history and its second copy
	Wrapped  bool          // the scrub reached the last file and starts again from the first
	Copied   int           // second copies written: missing (files written before them), or damaged and rewritten
	Repaired []error       // history files found damaged or missing, restored from the second copy or lost; each says which
	Took     time.Duration // wall time
}

// scrubCursorPath returns the file that keeps where the last Scrub stopped.
func scrubCursorPath(dir string) string {
	return filepath.Join(data.Dir(dir).Replica(), ".scrub-cursor")
}

// Scrub verifies the next files of the Parquet history and of its second
// copy (data.Dir.Replica), in name order from where the last call stopped:
// one file and its copy, then more up to ScrubFiles while they hold under
// ScrubBytes: a
// history file that does not check is set aside and restored from its
// second copy, or recorded as lost when that is damaged too (see
// RecoverParquet); a damaged or missing second copy is written again from
// its file; a history file missing while its second copy is there, and no
// compacted file merged it, is put back. It takes the fold lock.
func Scrub(dir string, now time.Time, logger *slog.Logger) (ScrubStats, error) {
	return scrub(dir, ScrubBytes, now, logger)
}

// scrub is Scrub reading up to budget bytes a call, beyond its first file.
func scrub(dir string, budget int64, now time.Time, logger *slog.Logger) (ScrubStats, error) {
	start := time.Now()
	var st ScrubStats
	unlock, err := durable.LockFile(data.Dir(dir).FoldLock())
	if err != nil {
		return st, err
	}
	defer unlock()
	rels, sizes, err := scrubList(dir)
	if err != nil {
		return st, err
	}
	if len(rels) == 0 {
		return st, nil
	}
	for _, n := range sizes {
		st.Total += n
	}
	cursor, _ := os.ReadFile(scrubCursorPath(dir))
	i := sort.SearchStrings(rels, string(cursor))
	if i < len(rels) && rels[i] == string(cursor) {
		i++
	}
	last := ""
	for n := 0; n < min(len(rels), ScrubFiles) && (n == 0 || st.Bytes < budget); n++ {
		if i >= len(rels) {
			i, st.Wrapped = 0, true
		}
		rel := rels[i]
		if err := scrubOne(dir, rel, now, &st, logger); err != nil {
			return st, err
		}
		st.Bytes += sizes[i]
		last = rel
		i++
	}
	if i >= len(rels) {
		st.Wrapped = true
		last = ""
	}
	if err := durable.WriteFileAtomic(scrubCursorPath(dir), []byte(last), 0o644); err != nil {
		return st, fmt.Errorf("scrub: %w", err)
	}
	st.Took = time.Since(start)
	if len(st.Repaired) > 0 || st.Copied > 0 {
		logger.Warn("scrubbed the history", "files", st.Files, "bytes", st.Bytes, "copied", st.Copied, "repaired", len(st.Repaired), "took", st.Took)
	}
	return st, nil
}

// scrubList returns the paths, relative to the results and replica
// directories, of every history file and second copy (one entry for
// both), sorted, with the bytes of the two.
func scrubList(dir string) (rels []string, sizes []int64, err error) {
	size := map[string]int64{}
	d := data.Dir(dir)
	for _, tree := range []struct {
		root  string
		parts func() ([]string, error)
	}{{d.Results(), d.ResultParts}, {d.Replica(), d.ReplicaParts}} {
		root := tree.root
		paths, err := tree.parts()
		if err != nil {
			return nil, nil, fmt.Errorf("scrub: %w", err)
		}
		for _, p := range paths {
			rel, _ := filepath.Rel(root, p)
			fi, err := os.Stat(p)
			if err != nil {
				continue
			}
			if _, ok := size[rel]; !ok {
				rels = append(rels, rel)
			}
			size[rel] += fi.Size()
		}
	}
	sort.Strings(rels)
	sizes = make([]int64, len(rels))
	for i, r := range rels {
		sizes[i] = size[r]
	}
	return rels, sizes, nil
}

// scrubOne verifies the history file rel and its second copy, and repairs
// what it can.
func scrubOne(dir, rel string, now time.Time, st *ScrubStats, logger *slog.Logger) error {
	path, second := filepath.Join(data.Dir(dir).Results(), rel), filepath.Join(data.Dir(dir).Replica(), rel)
	perr := verifyFile(path, st)
	if errors.Is(perr, os.ErrNotExist) {
		if merged(path) {
			// Merged by a compaction that ended before it removed the copy.
			if err := os.Remove(second); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("scrub: %w", err)
			}
			return nil
		}
		perr = fmt.Errorf("read parquet %s: %w: missing while its second copy is there", path, durable.DamagedError("history file is missing"))
	}
	if errors.Is(perr, durable.ErrDamaged) {
		restored, err := recoverParquet(dir, path, perr, now)
		st.Repaired = append(st.Repaired, err)
		if restored {
			logger.Warn("restored a damaged history file from its second copy", "err", err)
		} else {
			logger.Error("history file damaged and no good second copy: its checks are lost", "err", err)
		}
		return nil
	}
	if perr != nil {
		logger.Error("cannot scrub a history file", "err", perr)
		return nil
	}
	serr := verifyFile(second, st)
	if serr == nil {
		return nil
	}
	if errors.Is(serr, durable.ErrDamaged) {
		aside, err := setAside(dir, second, now)
		if err != nil {
			return fmt.Errorf("scrub: %w", err)
		}
		logger.Warn("second copy of a history file damaged: set aside and written again", "err", serr, "aside", aside)
	} else if !errors.Is(serr, os.ErrNotExist) {
		logger.Error("cannot scrub a second copy", "err", serr)
		return nil
	}
	if err := copyVerified(path, second); err != nil {
		return fmt.Errorf("scrub: %w", err)
	}
	st.Copied++
	return nil
}

// verifyFile checks one Parquet file whole, counting it in st when it is
// there.
func verifyFile(path string, st *ScrubStats) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read parquet %s: %w", path, err)
	}
	defer f.Close()
	st.Files++
	fi, err := f.Stat()
	if err == nil {
		err = checkParquet(countingReaderAt{f, &st.Read}, fi.Size())
	}
	if err != nil {
		return fmt.Errorf("read parquet %s: %w", path, err)
	}
	return nil
}

// countingReaderAt adds the bytes each ReadAt returns to *n.
type countingReaderAt struct {
	r io.ReaderAt
	n *int64
}

func (c countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	*c.n += int64(n)
	return n, err
}

// merged reports whether a live compacted file of path's day lists it.
func merged(path string) bool {
	p, err := scanPartition(filepath.Dir(path))
	return err == nil && p.merged[filepath.Base(path)]
}
