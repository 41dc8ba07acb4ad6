package data

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// WriteFileAtomic replaces path with data so that a reader sees either the
// old file or the new one, never half of either (rule P3): it writes a
// temporary file in the same directory, fsyncs it, renames it over path and
// fsyncs the directory. Missing parent directories are created. On error the
// old file is left as it was and the temporary file is removed.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	err := ReplaceFile(path, perm, true, func(w io.Writer) error {
		if _, err := w.Write(data); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// ReplaceFile is the mechanism under WriteFileAtomic for callers that stream
// content too large to hold, or batch their directory syncs: write fills a
// temporary file beside path, which is fsynced when syncFile is set and
// renamed over path. The directory is not synced: call SyncDir when the
// rename must survive a crash. On error path is left as it was; write's
// own error is returned as it is.
func ReplaceFile(path string, perm os.FileMode, syncFile bool, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+tempInfix+"*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op once renamed
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if syncFile {
		if err := f.Sync(); err != nil {
			f.Close()
			return fmt.Errorf("sync %s: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return nil
}

// tempInfix is in the name of every temporary file ReplaceFile makes:
// "." + the file's name + tempInfix + a random number.
const tempInfix = ".tmp-"

// IsTempName reports whether name is that of a temporary file ReplaceFile
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
