// Package durable is the file plumbing every store of the prober and the
// site share: files replaced atomically (atomic.go), locks (lock.go),
// damaged files set aside (damaged.go), the checksummed binary codec of the
// prober's own files (codec.go), the records of the logs appended to in
// place (records.go) and JSON lines that carry their own checksum
// (linecrc.go). Every function either leaves a file whole or says
// it is damaged, hence the name. It is internal: it is no promise to anyone
// outside the module, and it depends on no package of the prober.
package durable

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Files holds the file system calls under the atomic writes. Its zero value
// is the operating system's; a test sets a field to inject a failure (a
// full disk) or to see the order of the calls (an fsync before the rename).
type Files struct {
	Write  func(f *os.File, b []byte) (int, error) // nil: f.Write
	Sync   func(f *os.File) error                  // nil: f.Sync
	Rename func(oldpath, newpath string) error     // nil: os.Rename
	Link   func(oldpath, newpath string) error     // nil: os.Link
	Remove func(path string) error                 // nil: os.Remove
}

// fileWriter passes writes to Files.Write.
type fileWriter struct {
	fs Files
	f  *os.File
}

func (w fileWriter) Write(b []byte) (int, error) {
	if w.fs.Write != nil {
		return w.fs.Write(w.f, b)
	}
	return w.f.Write(b)
}

// AppendAt writes b into the existing file path at offset at, having cut
// the file there (what a write killed midway left past at is written
// over), and fsyncs it when syncFile: else a later flush of its file
// system must.
func (fs Files) AppendAt(path string, b []byte, at int64, syncFile bool) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	if err = f.Truncate(at); err == nil {
		_, err = f.Seek(at, io.SeekStart)
	}
	if err == nil {
		_, err = fileWriter{fs, f}.Write(b)
	}
	if err == nil && syncFile {
		err = fs.sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	return nil
}

func (fs Files) sync(f *os.File) error {
	if fs.Sync != nil {
		return fs.Sync(f)
	}
	return f.Sync()
}

// Move renames oldpath to newpath: os.Rename, or Files.Rename where set.
func (fs Files) Move(oldpath, newpath string) error {
	if fs.Rename != nil {
		return fs.Rename(oldpath, newpath)
	}
	return os.Rename(oldpath, newpath)
}

func (fs Files) link(oldpath, newpath string) error {
	if fs.Link != nil {
		return fs.Link(oldpath, newpath)
	}
	return os.Link(oldpath, newpath)
}

// RemoveFile removes path, when it exists, and fsyncs its directory so
// that the removal survives a crash.
func (fs Files) RemoveFile(path string) error {
	remove := os.Remove
	if fs.Remove != nil {
		remove = fs.Remove
	}
	if err := remove(path); errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return SyncDir(filepath.Dir(path))
}

// WriteFileAtomic is Files.WriteFileAtomic of the operating system.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return Files{}.WriteFileAtomic(path, data, perm)
}

// ReplaceFile is Files.ReplaceFile of the operating system.
func ReplaceFile(path string, perm os.FileMode, syncFile bool, write func(io.Writer) error) error {
	return Files{}.ReplaceFile(path, perm, syncFile, write)
}

// WriteFileAtomic replaces path with data so that a reader sees either the
// old file or the new one, never half of either (rule P3): it writes a
// temporary file in the same directory, fsyncs it, renames it over path and
// fsyncs the directory. Missing parent directories are created. On error the
// old file is left as it was and the temporary file is removed.
func (fs Files) WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := fs.ReplaceFile(path, perm, true, writeAll(path, data)); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// CreateFileAtomic creates path holding data, whole or not at all, and
// only if it does not exist: the temporary file, fsynced, is linked to path
// (which fails with an error wrapping os.ErrExist when path exists), then
// removed, and the directory fsynced. A full disk or a crash leaves no
// path, not an empty one.
func (fs Files) CreateFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	tmp, err := fs.WriteTemp(path, perm, true, writeAll(path, data))
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := fs.link(tmp, path); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	return SyncDir(filepath.Dir(path))
}

// writeAll returns the write function of data for ReplaceFile.
func writeAll(path string, data []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		if _, err := w.Write(data); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return nil
	}
}

// ReplaceFile is the mechanism under WriteFileAtomic for callers that stream
// content too large to hold, or batch their directory syncs: write fills a
// temporary file beside path, which is fsynced when syncFile is set and
// renamed over path. The directory is not synced: call SyncDir when the
// rename must survive a crash. On error path is left as it was; write's
// own error is returned as it is.
func (fs Files) ReplaceFile(path string, perm os.FileMode, syncFile bool, write func(io.Writer) error) error {
	tmp, err := fs.WriteTemp(path, perm, syncFile, write)
	if err != nil {
		return err
	}
	if err := fs.Move(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return nil
}

// WriteTemp writes a temporary file beside path with write, fsynced when
// syncFile is set, and returns its name, for a caller that renames it over
// path later (a publish moves the files that point at others only after
// one flush of them all: SyncFS). On error it is removed.
func (fs Files) WriteTemp(path string, perm os.FileMode, syncFile bool, write func(io.Writer) error) (tmp string, err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+tempInfix+"*")
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := fs.fill(f, path, syncFile, write); err != nil {
		return "", err
	}
	return f.Name(), nil
}

// CreateFile writes path, a new file nobody reads until a later move or
// flush makes it whole (a directory written afresh, moved into place
// after one flush of it all), with write, fsynced when syncFile is set:
// no temporary file, no rename. On error path is removed.
func (fs Files) CreateFile(path string, perm os.FileMode, syncFile bool, write func(io.Writer) error) error {
	return fs.create(path, os.O_TRUNC, perm, syncFile, write)
}

// CreateNew is CreateFile of a path that does not exist yet: a file under
// a name nothing names until a later flush (a part of the site's index,
// named by the hash of its bytes). When path exists it writes nothing,
// leaves the file as it is and returns an error wrapping fs.ErrExist.
func (fs Files) CreateNew(path string, perm os.FileMode, syncFile bool, write func(io.Writer) error) error {
	return fs.create(path, os.O_EXCL, perm, syncFile, write)
}

// create is CreateFile and CreateNew: path opened with os.O_CREATE and
// flag, its mode set to perm whatever the umask, as ReplaceFile's is.
func (fs Files) create(path string, flag int, perm os.FileMode, syncFile bool, write func(io.Writer) error) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|flag, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			os.Remove(path)
		}
	}()
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return fs.fill(f, path, syncFile, write)
}

// fill writes f, the file of path, with write, fsyncs it when syncFile
// is set, and closes it, also on error; write's own error is returned as
// it is.
func (fs Files) fill(f *os.File, path string, syncFile bool, write func(io.Writer) error) error {
	if err := write(fileWriter{fs, f}); err != nil {
		f.Close()
		return err
	}
	if syncFile {
		if err := fs.sync(f); err != nil {
			f.Close()
			return fmt.Errorf("sync %s: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// tempInfix is in the name of every temporary file WriteTemp makes (for
// ReplaceFile too): "." + the file's name + tempInfix + a random number.
const tempInfix = ".tmp-"

// IsTempName reports whether name is that of a temporary file WriteTemp
// makes, which a crash may leave behind.
func IsTempName(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, tempInfix)
}

// SyncDir fsyncs a directory so that a rename or a new file in it survives a
// crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}
