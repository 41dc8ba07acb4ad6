package history

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"plug.directory/prober/data"
)

// DamagedKeep and DamagedBytes bound what damaged/ keeps for inspection:
// a file set aside goes once it is DamagedKeep old, and the oldest go
// first while the files there hold more than DamagedBytes (at least the
// latest stays, of whatever size). The record of damage, history.jsonl, is
// the operator's to clear.
const (
	DamagedKeep  = 30 * 24 * time.Hour
	DamagedBytes = 2 << 30
)

// asideLayout is the time setAside appends to a file's name.
const asideLayout = "20060102T150405.000000000"

// setAside moves path into the damaged directory of dir, under its path
// relative to dir with the time now appended, and returns where it went.
// It then prunes the directory to its bounds (pruneDamaged).
func setAside(dir, path string, now time.Time) (string, error) {
	return putAside(dir, path, now, os.Rename)
}

// KeepAside is setAside of a file that stays where it is, to be written
// again without its damage (the pause record): a hard link to it goes
// into the damaged directory, and keeps its bytes once it is replaced.
func KeepAside(dir, path string, now time.Time) (string, error) {
	return putAside(dir, path, now, os.Link)
}

// putAside puts path into the damaged directory by put (a rename or a
// link): setAside and KeepAside.
func putAside(dir, path string, now time.Time, put func(from, to string) error) (string, error) {
	rel, err := filepath.Rel(dir, path)
	if err != nil || !filepath.IsLocal(rel) {
		rel = filepath.Base(path)
	}
	aside := filepath.Join(data.Dir(dir).Damaged(), rel+"."+now.UTC().Format(asideLayout))
	if err := os.MkdirAll(filepath.Dir(aside), 0o755); err != nil {
		return "", fmt.Errorf("set aside %s: %w", path, err)
	}
	if err := put(path, aside); err != nil {
		return "", fmt.Errorf("set aside %s: %w", path, err)
	}
	if err := pruneDamaged(dir, aside, now.Add(-DamagedKeep), DamagedBytes); err != nil {
		return aside, fmt.Errorf("set aside %s: %w", path, err)
	}
	return aside, nil
}

// pruneDamaged removes the files set aside under dir's damaged/ before
// since, then the oldest while the rest hold more than maxBytes; keep, the
// file just set aside, stays.
func pruneDamaged(dir, keep string, since time.Time, maxBytes int64) error {
	type aside struct {
		path string
		at   time.Time
		size int64
	}
	var files []aside
	var total int64
	err := filepath.WalkDir(data.Dir(dir).Damaged(), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == keep || p == data.Dir(dir).HistoryDamage() {
			return err
		}
		ext := filepath.Ext(p)
		at, err := time.Parse(asideLayout, strings.TrimPrefix(filepath.Ext(strings.TrimSuffix(p, ext)), ".")+ext)
		if err != nil {
			return nil // not set aside by setAside
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		files = append(files, aside{p, at, fi.Size()})
		total += fi.Size()
		return nil
	})
	if err != nil {
		return fmt.Errorf("prune damaged files: %w", err)
	}
	if fi, err := os.Stat(keep); err == nil {
		total += fi.Size()
	}
	slices.SortFunc(files, func(a, b aside) int { return a.at.Compare(b.at) })
	for _, f := range files {
		if !f.at.Before(since) && total <= maxBytes {
			break
		}
		if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("prune damaged files: %w", err)
		}
		total -= f.size
	}
	return nil
}
