package history

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// replicaOf returns the second copy's path of the history file path of the
// data directory dir.
func replicaOf(dir, path string) string {
	rel, err := filepath.Rel(data.Dir(dir).Results(), path)
	if err != nil || !filepath.IsLocal(rel) {
		rel = filepath.Base(path)
	}
	return filepath.Join(data.Dir(dir).Replica(), rel)
}

// dataDirOf returns the data directory of a history file:
// DIR/results/date=…/NAME.parquet.
func dataDirOf(path string) string { return filepath.Dir(filepath.Dir(filepath.Dir(path))) }

// writeReplica writes b, the bytes of the history file path, as its second
// copy.
func writeReplica(path string, b []byte) error {
	return durable.WriteFileAtomic(replicaOf(dataDirOf(path), path), b, 0o644)
}

// copyVerified reads the history file from, checks the bytes read (footer
// and SumKey), and writes those bytes to to atomically. A from that does
// not check is an error wrapping ErrDamaged, and nothing is written.
func copyVerified(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("read parquet %s: %w", from, err)
	}
	if err := checkParquet(bytes.NewReader(b), int64(len(b))); err != nil {
		return fmt.Errorf("read parquet %s: %w", from, err)
	}
	return durable.WriteFileAtomic(to, b, 0o644)
}

// HistoryDamage is one history file found damaged, as recorded in
// data.Dir.HistoryDamage: restored from its second copy, or lost with the
// minutes it covered.
type HistoryDamage struct {
	At       time.Time `json:"at"`                // when it was found
	File     string    `json:"file"`              // its path under the data directory
	Aside    string    `json:"aside"`             // where the damaged bytes were set aside
	Restored bool      `json:"restored"`          // false: no good second copy; its checks are lost
	Day      string    `json:"day"`               // the day (UTC) of its checks, YYYY-MM-DD
	Minutes  []string  `json:"minutes,omitempty"` // the minutes of its runs (HH:MM, UTC) when its name or list tells; none: the whole day
	Err      string    `json:"err"`               // what was wrong
}

// Lost says which checks the damage took, for the log, the metrics and the
// pages: "checks of 2026-12-02 19:25 lost to a damaged file …".
func (h HistoryDamage) Lost() string {
	when := h.Day + " (the whole day)"
	if len(h.Minutes) > 0 {
		when = h.Day + " " + strings.Join(h.Minutes, ", ")
	}
	return "checks of " + when + " lost to a damaged file (" + h.File + ")"
}

// ReadHistoryDamage reads every HistoryDamage recorded. A missing record
// is none; a line that does not check is skipped and named in bad.
func ReadHistoryDamage(dir string) ([]HistoryDamage, []error, error) {
	return durable.ReadCRCLines[HistoryDamage](data.Dir(dir).HistoryDamage())
}

// recordDamage appends h to the record, fsynced.
func recordDamage(dir string, h HistoryDamage) error {
	return durable.AppendCRCLines(data.Dir(dir).HistoryDamage(), []HistoryDamage{h})
}

// minutesOf returns the minutes (HH:MM) whose runs wrote the history file
// path: from a part's name, or from the list a compacted file's footer
// carries when it still reads. None when neither tells.
func minutesOf(path string) []string {
	names := []string{filepath.Base(path)}
	if strings.HasPrefix(names[0], mergedPrefix) {
		names, _ = mergedList(path)
	}
	var out []string
	for _, n := range names {
		if t, _, ok := data.JournalMinute(n); ok {
			out = append(out, t.Format("15:04"))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// RecoverParquet deals with the history file path of the data directory
// dir that a reader found damaged (cause wraps ErrDamaged): it sets the
// file aside and puts its second copy in its place (restored true: read it
// again), or, when the second copy is damaged or missing too, sets that
// aside as well and records the checks as lost (HistoryDamage). Either way
// it is recorded and the error returned says what was done, for the log.
// Any other cause is returned as it is. It takes the fold lock, so it never
// races a fold or a compaction; a file that went meanwhile (merged) is
// left to the reader's next listing.
func RecoverParquet(dir, path string, cause error, now time.Time) (restored bool, err error) {
	if !errors.Is(cause, durable.ErrDamaged) {
		return false, cause
	}
	unlock, err := durable.LockFile(data.Dir(dir).FoldLock())
	if err != nil {
		return false, errors.Join(cause, err)
	}
	defer unlock()
	f, _, err := openParquet(path)
	if err == nil {
		// Repaired meanwhile: whole now.
		f.Close()
		return true, cause
	}
	if !errors.Is(err, durable.ErrDamaged) {
		return false, cause // merged meanwhile: gone
	}
	return recoverParquet(dir, path, cause, now)
}

// recoverParquet is RecoverParquet with the fold lock held, also of a
// history file that is missing (nothing to set aside then).
func recoverParquet(dir, path string, cause error, now time.Time) (bool, error) {
	if !errors.Is(cause, durable.ErrDamaged) {
		return false, cause
	}
	rel, _ := filepath.Rel(dir, path)
	second := replicaOf(dir, path)
	h := HistoryDamage{At: now.UTC(), File: filepath.ToSlash(rel), Day: data.DayOf(filepath.Dir(path)), Err: cause.Error()}
	// Before they move: a compacted file's list is in its footer.
	if h.Minutes = minutesOf(path); len(h.Minutes) == 0 {
		h.Minutes = minutesOf(second)
	}
	said := "missing"
	if _, err := os.Stat(path); err == nil {
		aside, err := setAside(dir, path, now)
		if err != nil {
			return false, errors.Join(cause, err)
		}
		h.Aside, said = aside, "set aside as "+aside
	}
	cerr := copyVerified(second, path)
	if cerr == nil {
		h.Restored = true
		if err := recordDamage(dir, h); err != nil {
			return true, errors.Join(cause, err)
		}
		return true, fmt.Errorf("%w; %s and restored from its second copy %s", cause, said, second)
	}
	if errors.Is(cerr, durable.ErrDamaged) {
		if a, err := setAside(dir, second, now); err == nil {
			cerr = fmt.Errorf("%w; set aside as %s", cerr, a)
		}
	}
	if err := recordDamage(dir, h); err != nil {
		return false, errors.Join(cause, cerr, err)
	}
	return false, fmt.Errorf("%w; %s; no good second copy (%w): %s", cause, said, cerr, h.Lost())
}
