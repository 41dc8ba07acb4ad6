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
	"syscall"

	"plug.directory/prober/internal/durable"
)

// writer replaces files atomically (rule P3) and only when their bytes
// change. It does what durable.WriteFileAtomic does — temporary file in the
// same directory, fsync, rename — but fsyncs each directory once at the end
// (flush) rather than after every file: publishing a thousand servers writes
// some four thousand files into a handful of directories, and a directory
// fsync per file would double the time. A reader sees the old file or the
// new one either way; flush makes the renames durable. Safe for concurrent
// use.
type writer struct {
	noSync    bool // leave fsync to one sync of everything (syncAll), for a rebuild
	mu        sync.Mutex
	dirs      map[string]bool // directories renamed into, to fsync
	made      map[string]bool // directories known to exist
	written   atomic.Int64
	unchanged atomic.Int64
	removed   atomic.Int64
}

func newWriter() *writer { return &writer{dirs: map[string]bool{}, made: map[string]bool{}} }

// put replaces path with b unless it already holds exactly b, and reports
// whether it wrote.
func (w *writer) put(path string, b []byte) (bool, error) {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
		w.unchanged.Add(1)
		return false, nil
	}
	dir := filepath.Dir(path)
	w.mu.Lock()
	made := w.made[dir]
	w.mu.Unlock()
	if !made {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return false, fmt.Errorf("write %s: %w", path, err)
		}
		w.mu.Lock()
		w.made[dir] = true
		w.mu.Unlock()
	}
	if err := writeTemp(path, !w.noSync, b); err != nil {
		return false, err
	}
	w.mu.Lock()
	w.dirs[dir] = true
	w.mu.Unlock()
	w.written.Add(1)
	return true, nil
}

// writeTemp writes the pieces b, one after the other, over path with
// durable.ReplaceFile, fsyncing the file when sync is set; the writer syncs
// the directories once at the end of a run. On error path is left as it was.
func writeTemp(path string, sync bool, b ...[]byte) error {
	return durable.ReplaceFile(path, 0o644, sync, func(f io.Writer) error {
		for _, piece := range b {
			if _, err := f.Write(piece); err != nil {
				return fmt.Errorf("write %s: %w", path, err)
			}
		}
		return nil
	})
}

// replace writes the pieces of one file that is known to have changed,
// without reading the old one to compare.
func (w *writer) replace(path string, pieces [][]byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := writeTemp(path, true, pieces...); err != nil {
		return err
	}
	w.mu.Lock()
	w.dirs[filepath.Dir(path)] = true
	w.mu.Unlock()
	w.written.Add(1)
	return nil
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
	w.mu.Lock()
	w.dirs[filepath.Dir(path)] = true
	w.mu.Unlock()
	w.removed.Add(1)
	return nil
}

// flush makes what was written durable: with noSync, one sync(2) of
// everything; then an fsync of every directory written into, so the renames
// survive a crash.
func (w *writer) flush() error {
	if w.noSync {
		syscall.Sync()
	}
	w.mu.Lock()
	dirs := make([]string, 0, len(w.dirs))
	for d := range w.dirs {
		dirs = append(dirs, d)
	}
	w.dirs = map[string]bool{}
	w.mu.Unlock()
	sort.Strings(dirs)
	for _, d := range dirs {
		if err := durable.SyncDir(d); err != nil {
			return err
		}
	}
	return nil
}
