package site

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"plug.directory/prober/internal/durable"
)

// writer replaces files atomically (rule P3) and only when their bytes
// change, durably at the cost of one flush per publish rather than an
// fsync per file. Each file is written to a temporary file beside it,
// without an fsync, and renamed over it only after one syncfs of the
// file systems holding roots has made every temporary file durable
// (flush): a power cut before the syncfs leaves the old file, one after it
// the new one, whole, on any file system. (Renamed before its bytes were
// on disk, a file could be left empty where the file system does not
// write a file as it is renamed over another, as XFS does not.) The files
// that point at the others (index.json, status.json, the site's record)
// are staged the same way and moved last, in the order staged, once the
// renames before them are durable. A crash before then leaves the index
// and the record of the previous publish, pointing at files that exist
// and are whole; the next publish writes again what it finds changed. A
// reader sees the old file or the new one either way. Where there is no
// syncfs (durable.CanSyncFS), each file is fsynced as it is written and
// each directory at flush. Safe for concurrent use, but flush, which must
// come last.
type writer struct {
	roots     []string  // directories whose file systems flush syncs: the output and the site's record
	calls     fileCalls // the file system's, but in tests
	each      bool      // fsync each file as it is written: no syncfs here
	mu        sync.Mutex
	dirs      map[string]bool // directories created in or removed from, fsynced by flush where there is no syncfs
	made      map[string]bool // directories known to exist
	replaced  []staged        // renamed by flush (or replacePending) in the order written, before the staged files move
	held      int             // the most replaced held before replacePending; 0: until flush
	failed    error           // of replacePending in a render: flush returns it
	renaming  sync.Mutex      // held by replacePending
	staged    []staged        // moved by flush, in the order staged
	trees     []tree          // directories written afresh, moved into place by flush; set before any write
	after     []string        // removed by flush once the staged files moved
	written   atomic.Int64
	unchanged atomic.Int64
	removed   atomic.Int64
}

// fileCalls are the file system calls of a writer. The zero value is the
// operating system's; a test sets a field to count the calls or make one
// fail (Config.calls).
type fileCalls struct {
	durable.Files                              // the calls under each write
	syncFS        func(dirs ...string) error   // nil: durable.SyncFS
	read          func(string) ([]byte, error) // a file read back to compare; nil: os.ReadFile
}

func newWriter(roots ...string) *writer {
	return &writer{roots: roots, each: !durable.CanSyncFS, dirs: map[string]bool{}, made: map[string]bool{}}
}

// staged is a file written to a temporary file, to be moved over its
// path, or removed when tmp is "", or bytes to append to it (tail).
type staged struct {
	path, tmp string
	tail      []byte // appended at offset at, the file cut there first: the end of a log, past which a killed publish may have left part of a record
	at        int64
}

// A rebuild into an output without a directory of the servers' files
// (servers/, badges/...: a new site, or one whose output was lost) writes
// that directory afresh: a new directory beside it (freshPrefix) that
// flush moves into place once every file in it is durable, before the
// staged files that point at them. A file in it is written straight, with
// no temporary file, no rename and no read of what it held: nobody reads
// the directory before it moves. A rebuild killed before leaves no index,
// so the next publish rebuilds again and removes what it left
// (writeAfresh).
type tree struct{ dir, tmp string }

// freshPrefix begins the name of a directory being written afresh.
const freshPrefix = ".rebuild-new-"

// writeAfresh has the writer write each directory subs of parent that
// does not exist afresh (tree), having removed what a killed rebuild left
// in parent. It is called before any write.
func (w *writer) writeAfresh(parent string, subs ...string) error {
	old, _ := filepath.Glob(filepath.Join(parent, freshPrefix+"*"))
	for _, d := range old {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("remove %s: %w", d, err)
		}
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", parent, err)
	}
	for _, sub := range subs {
		dir := filepath.Join(parent, sub)
		if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		tmp, err := os.MkdirTemp(parent, freshPrefix+sub+"-")
		if err == nil {
			err = os.Chmod(tmp, 0o755)
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", dir, err)
		}
		w.trees = append(w.trees, tree{dir, tmp})
	}
	return nil
}

// afresh returns where path is written: in its tree's new directory when
// it is in one written afresh (and true), else path.
func (w *writer) afresh(path string) (string, bool) {
	for _, t := range w.trees {
		if rel, ok := strings.CutPrefix(path, t.dir+string(filepath.Separator)); ok {
			return filepath.Join(t.tmp, rel), true
		}
	}
	return path, false
}

// put replaces path with b unless it already holds exactly b, which it
// reads back to know, and reports whether it wrote: for a file whose
// bytes the caller does not know (putOver, putSum).
func (w *writer) put(path string, b []byte) (bool, error) {
	if _, fresh := w.afresh(path); !fresh && w.same(path, b) {
		return false, nil
	}
	return true, w.write(path, b)
}

// putOver is put of a file the caller read: old is what path holds, nil
// when it does not exist.
func (w *writer) putOver(path string, b, old []byte) (bool, error) {
	if old != nil && bytes.Equal(old, b) {
		w.unchanged.Add(1)
		return false, nil
	}
	return true, w.write(path, b)
}

// putSum is put of a file the caller keeps the hash of: *sum is the
// FNV-64a of what path holds (0 when unknown: it is read back), and
// becomes that of b once written.
func (w *writer) putSum(path string, b []byte, sum *uint64) (bool, error) {
	changed, now := w.changed(path, b, *sum)
	if changed {
		if err := w.write(path, b); err != nil {
			return false, err
		}
	}
	*sum = now
	return changed, nil
}

// changed reports whether b differs from what path holds, known by sum,
// its FNV-64a (0 when unknown: path is read back), and counts it unchanged
// if not; it returns the FNV-64a of b.
func (w *writer) changed(path string, b []byte, sum uint64) (bool, uint64) {
	now := fnv64a(b)
	if _, fresh := w.afresh(path); fresh {
		return true, now
	}
	if sum == 0 {
		return !w.same(path, b), now
	}
	if sum == now {
		w.unchanged.Add(1)
		return false, now
	}
	return true, now
}

// fnv64a returns the FNV-64a of b, the hash the site's record keeps of
// the files it does not read back.
func fnv64a(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// same reports, and counts, whether path holds exactly b.
func (w *writer) same(path string, b []byte) bool {
	read := os.ReadFile
	if w.calls.read != nil {
		read = w.calls.read
	}
	if old, err := read(path); err == nil && bytes.Equal(old, b) {
		w.unchanged.Add(1)
		return true
	}
	return false
}

// replacedHeld is how many files replaced a publish's writer holds in
// temporary files before it makes them durable and renames them over
// their paths in the middle of a render (replacePending): a minute's are
// a few hundred, but a rebuild over an output that exists replaces every
// file, whose temporary files would take the disk twice over.
const replacedHeld = 8192

// write replaces path with b, known to differ: b is written to a
// temporary file beside path, without an fsync (but where there is no
// syncfs), which flush, or replacePending once w.held are held,
// makes durable and renames over path. Until then path holds what it
// held. In a directory written afresh, path is written in place.
func (w *writer) write(path string, b []byte) error {
	if _, fresh := w.afresh(path); fresh {
		return w.writeBy(path, b, w.calls.CreateFile)
	}
	if err := w.mkdir(path); err != nil {
		return err
	}
	tmp, err := w.calls.WriteTemp(path, 0o644, w.each, writePieces(path, b))
	if err != nil {
		return err
	}
	w.written.Add(1)
	w.mu.Lock()
	w.replaced = append(w.replaced, staged{path: path, tmp: tmp})
	full := w.held > 0 && len(w.replaced) >= w.held
	w.mu.Unlock()
	if full {
		if err := w.replacePending(); err != nil {
			w.mu.Lock()
			w.failed = cmp.Or(w.failed, err)
			w.mu.Unlock()
		}
	}
	return nil
}

// replacePending makes the temporary files of the files replaced so far
// durable, with one syncfs, and renames each over its path, in the order
// written, then fsyncs the directories renamed into. Batches are renamed
// one at a time, in the order written: a server's older checks are renamed
// before the file whose history lets a check go to them. On error, or
// once a batch before failed, the temporary files not renamed are
// removed, and no batch after is renamed.
func (w *writer) replacePending() error {
	w.renaming.Lock()
	defer w.renaming.Unlock()
	w.mu.Lock()
	batch, err := w.replaced, w.failed
	w.replaced = nil
	w.mu.Unlock()
	if len(batch) == 0 {
		return err
	}
	if err == nil {
		err = w.syncAll(nil)
	}
	return w.renameOrRemove(batch, err)
}

// renameOrRemove renames the temporary files of batch over their paths
// (renameOver) when err, that of the flush before, is nil; on error,
// err or its own, it removes those not renamed and returns it.
func (w *writer) renameOrRemove(batch []staged, err error) error {
	if err == nil {
		err = w.renameOver(batch)
	}
	if err != nil {
		removeTemps(batch)
	}
	return err
}

// renameOver renames the temporary files of batch over their paths, then
// fsyncs the directories renamed into, so that the files that point at
// them are moved only once the renames are durable. It stops at the first
// error, the temporary files of those from it on left to its caller.
func (w *writer) renameOver(batch []staged) error {
	dirs := map[string]bool{}
	for k, s := range batch {
		if err := w.calls.Move(s.tmp, s.path); err != nil {
			return fmt.Errorf("replace %s: %w", s.path, err)
		}
		batch[k].tmp = ""
		dirs[filepath.Dir(s.path)] = true
	}
	for _, d := range sortedKeys(dirs) {
		if err := durable.SyncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// removeTemps removes the temporary files of batch still there.
func removeTemps(batch []staged) {
	for _, s := range batch {
		if s.tmp != "" {
			os.Remove(s.tmp)
		}
	}
}

// writeBy writes path with b by put (Files.CreateNew, or CreateFile in a
// directory written afresh: nobody reads it before its tree moves into
// place).
func (w *writer) writeBy(path string, b []byte, put func(string, os.FileMode, bool, func(io.Writer) error) error) error {
	path, fresh := w.afresh(path)
	if err := w.mkdir(path); err != nil {
		return err
	}
	if fresh {
		put = w.calls.CreateFile
	}
	if err := put(path, 0o644, w.each, writePieces(path, b)); err != nil {
		return err
	}
	w.touched(path)
	w.written.Add(1)
	return nil
}

// create writes path, a new file that nothing published names (a part of
// the index, named by the hash of its bytes), in place: no temporary file
// and no rename, half the calls of write. Nothing reads it before flush
// has made it durable and moved the index that names it into place; one
// a killed publish left half written is written over by the next publish
// that makes it, or removed by the one after the kill (writeIndex's
// sweep). A path that exists already is written as write does.
func (w *writer) create(path string, b []byte) error {
	if err := w.writeBy(path, b, w.calls.CreateNew); !errors.Is(err, fs.ErrExist) {
		return err
	}
	return w.write(path, b)
}

// appendAt writes b into path at offset at, the file cut there first,
// without an fsync (but where there is no syncfs): flush makes it durable.
func (w *writer) appendAt(path string, b []byte, at int64) error {
	if err := w.calls.AppendAt(path, b, at, w.each); err != nil {
		return err
	}
	w.written.Add(1)
	return nil
}

// stage writes the pieces of path, one after the other, to a temporary
// file that flush moves over path once every other file is durable, after
// the files staged before.
func (w *writer) stage(path string, pieces ...[]byte) error {
	if err := w.mkdir(path); err != nil {
		return err
	}
	tmp, err := w.calls.WriteTemp(path, 0o644, w.each, writePieces(path, pieces...))
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.staged = append(w.staged, staged{path: path, tmp: tmp})
	w.mu.Unlock()
	w.written.Add(1)
	return nil
}

// stageAppend has flush append b to path at offset at, in its turn among
// the staged files, and fsync it: what path holds past at is dropped.
func (w *writer) stageAppend(path string, b []byte, at int64) {
	w.mu.Lock()
	w.staged = append(w.staged, staged{path: path, tail: b, at: at})
	w.mu.Unlock()
	w.written.Add(1)
}

// stageRemove has flush remove path, in its turn among the staged files.
func (w *writer) stageRemove(path string) {
	w.mu.Lock()
	w.staged = append(w.staged, staged{path: path})
	w.mu.Unlock()
}

// removeAfter has flush remove path once every staged file moved and is
// durable: a file the moved ones no longer name, which the ones they
// replace did.
func (w *writer) removeAfter(path string) {
	w.mu.Lock()
	w.after = append(w.after, path)
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

// writePieces returns the write function of the pieces b for WriteTemp,
// CreateFile and CreateNew.
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
	path, _ = w.afresh(path)
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
// directories written afresh into place, then renames the files replaced
// over theirs and fsyncs their directories, then moves the staged files,
// in the order staged, and fsyncs their directories. On error (its own,
// or that of a replacePending before) nothing more is moved: the
// temporary files left are removed.
func (w *writer) flush() error {
	w.mu.Lock()
	dirs := sortedKeys(w.dirs)
	replaced, pointers, after, trees, err := w.replaced, w.staged, w.after, w.trees, w.failed
	w.dirs, w.replaced, w.staged, w.after, w.trees, w.failed = map[string]bool{}, nil, nil, nil, nil, nil
	w.mu.Unlock()
	if err == nil {
		err = w.syncAll(dirs)
	}
	moved := map[string]bool{}
	for _, t := range trees {
		switch {
		case err == nil:
			if err = w.calls.Move(t.tmp, t.dir); err != nil {
				err = fmt.Errorf("write %s: %w", t.dir, err)
			}
			moved[filepath.Dir(t.dir)] = true
		default:
			os.RemoveAll(t.tmp)
		}
	}
	err = w.renameOrRemove(replaced, err)
	for _, s := range pointers {
		switch {
		case err == nil:
			if err = w.move(s); s.tail == nil { // an append is fsynced as it is made; its directory is as it was
				moved[filepath.Dir(s.path)] = true
			}
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
	for _, path := range after {
		if err := w.remove(path); err != nil {
			return err
		}
	}
	return nil
}

// discard removes what a publish that failed before its flush left for
// the flush to move: the temporary files of the files replaced and
// staged, and the directories written afresh. A site build would ship
// them until the next publish removed them.
func (w *writer) discard() {
	w.mu.Lock()
	replaced, pointers, trees := w.replaced, w.staged, w.trees
	w.replaced, w.staged, w.trees = nil, nil, nil
	w.mu.Unlock()
	removeTemps(replaced)
	removeTemps(pointers)
	for _, t := range trees {
		os.RemoveAll(t.tmp)
	}
}

// move renames a staged file over its path, or removes the path (a
// missing one is no error). A temporary file that cannot be renamed is
// removed.
func (w *writer) move(s staged) error {
	if s.tail != nil {
		return durable.AppendFile(s.path, s.tail, s.at)
	}
	if s.tmp == "" {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", s.path, err)
		}
		return nil
	}
	if err := w.calls.Move(s.tmp, s.path); err != nil {
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
	if w.calls.syncFS != nil {
		return w.calls.syncFS(w.roots...)
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
