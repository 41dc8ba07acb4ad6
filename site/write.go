package site

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"

	"plug.directory/prober/internal/durable"
)

// writer replaces files atomically (rule P3) and only when their bytes
// change, durably at the cost of one flush per publish rather than an
// fsync per file. Each file is written to a temporary file beside it and
// renamed over it, without an fsync; the files that point at the others
// (index.json, status.json, the site's record) are staged: written to
// temporary files and moved into place by flush only after one syncfs of
// the file systems holding roots has made everything durable. A crash
// before then leaves the index and the record of the previous publish,
// pointing at files that exist and are whole; the next publish writes
// again what it finds changed. A reader sees the old file or the new one
// either way. Where there is no syncfs (durable.CanSyncFS), each file is
// fsynced as it is written and each directory at flush. Safe for
// concurrent use, but flush, which must come last.
type writer struct {
	roots     []string              // directories whose file systems flush syncs: the output and the site's record
	files     durable.Files         // the calls under each write; a test counts them
	syncFS    func(...string) error // flushes the file systems of roots; nil: durable.SyncFS
	each      bool                  // fsync each file as it is written: no syncfs here
	mu        sync.Mutex
	dirs      map[string]bool // directories renamed into or removed from
	made      map[string]bool // directories known to exist
	staged    []staged        // moved by flush, in the order staged
	written   atomic.Int64
	unchanged atomic.Int64
	removed   atomic.Int64
}

func newWriter(roots ...string) *writer {
	return &writer{roots: roots, each: !durable.CanSyncFS, dirs: map[string]bool{}, made: map[string]bool{}}
}

// staged is a file written to a temporary file, to be moved over its
// path, or removed when tmp is "".
type staged struct{ path, tmp string }

// put replaces path with b unless it already holds exactly b, and reports
// whether it wrote.
func (w *writer) put(path string, b []byte) (bool, error) {
	if w.same(path, b) {
		return false, nil
	}
	if err := w.mkdir(path); err != nil {
		return false, err
	}
	if err := w.files.ReplaceFile(path, 0o644, w.each, writePieces(path, b)); err != nil {
		return false, err
	}
	w.touched(path)
	w.written.Add(1)
	return true, nil
}

// same reports, and counts, whether path holds exactly b.
func (w *writer) same(path string, b []byte) bool {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
		w.unchanged.Add(1)
		return true
	}
	return false
}

// stage writes the pieces of path, one after the other, to a temporary
// file that flush moves over path once every other file is durable, after
// the files staged before.
func (w *writer) stage(path string, pieces ...[]byte) error {
	if err := w.mkdir(path); err != nil {
		return err
	}
	tmp, err := w.files.WriteTemp(path, 0o644, w.each, writePieces(path, pieces...))
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.staged = append(w.staged, staged{path, tmp})
	w.mu.Unlock()
	w.written.Add(1)
	return nil
}

// stageRemove has flush remove path, in its turn among the staged files.
func (w *writer) stageRemove(path string) {
	w.mu.Lock()
	w.staged = append(w.staged, staged{path: path})
	w.mu.Unlock()
}

// mkdir creates the directory of path, once per run.
func (w *writer) mkdir(path string) error {
	dir := filepath.Dir(path)
	w.mu.Lock()
	made := w.made[dir]
	w.mu.Unlock()
	if made {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	w.mu.Lock()
	w.made[dir] = true
	w.mu.Unlock()
	return nil
}

// touched notes that the directory of path changed, for flush.
func (w *writer) touched(path string) {
	w.mu.Lock()
	w.dirs[filepath.Dir(path)] = true
	w.mu.Unlock()
}

// writePieces returns the write function of the pieces b for ReplaceFile.
func writePieces(path string, b ...[]byte) func(io.Writer) error {
	return func(f io.Writer) error {
		for _, piece := range b {
			if _, err := f.Write(piece); err != nil {
				return fmt.Errorf("write %s: %w", path, err)
			}
		}
		return nil
	}
}

// remove deletes path; a missing file is not an error.
func (w *writer) remove(path string) error {
	err := os.Remove(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	w.touched(path)
	w.removed.Add(1)
	return nil
}

// flush makes what was written durable, with one syncfs of the file
// systems of roots (where there is none, an fsync of each directory
// written into, the files having been fsynced one by one), then moves the
// staged files into place, in the order staged, and fsyncs their
// directories. On error nothing more is moved: the temporary files left
// are removed.
func (w *writer) flush() error {
	w.mu.Lock()
	dirs := sortedKeys(w.dirs)
	pointers := w.staged
	w.dirs, w.staged = map[string]bool{}, nil
	w.mu.Unlock()
	err := w.syncAll(dirs)
	moved := map[string]bool{}
	for _, s := range pointers {
		switch {
		case err == nil:
			err = w.move(s)
			moved[filepath.Dir(s.path)] = true
		case s.tmp != "":
			os.Remove(s.tmp)
		}
	}
	if err != nil {
		return err
	}
	for _, d := range sortedKeys(moved) {
		if err := durable.SyncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// move renames a staged file over its path, or removes the path (a
// missing one is no error). A temporary file that cannot be renamed is
// removed.
func (w *writer) move(s staged) error {
	if s.tmp == "" {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", s.path, err)
		}
		return nil
	}
	rename := os.Rename
	if w.files.Rename != nil {
		rename = w.files.Rename
	}
	if err := rename(s.tmp, s.path); err != nil {
		os.Remove(s.tmp)
		return fmt.Errorf("replace %s: %w", s.path, err)
	}
	return nil
}

// syncAll makes durable the files written and the directories changed.
func (w *writer) syncAll(dirs []string) error {
	if w.each {
		for _, d := range dirs {
			if err := durable.SyncDir(d); err != nil {
				return err
			}
		}
	}
	if w.syncFS != nil {
		return w.syncFS(w.roots...)
	}
	return durable.SyncFS(w.roots...)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
