package durable

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestAtomicWrites: the file is fsynced before it is renamed or linked
// into place (after a power loss a renamed file that was never synced can
// be empty), and a full disk leaves the old file, no new one, no temporary
// file (rule P3).
func TestAtomicWrites(t *testing.T) {
	t.Parallel()
	// calls returns Files recording each Sync, Rename and Link in order.
	calls := func(log *[]string) Files {
		return Files{
			Sync:   func(f *os.File) error { *log = append(*log, "sync"); return f.Sync() },
			Rename: func(a, b string) error { *log = append(*log, "rename"); return os.Rename(a, b) },
			Link:   func(a, b string) error { *log = append(*log, "link"); return os.Link(a, b) },
		}
	}
	diskFull := Files{Write: func(*os.File, []byte) (int, error) { return 0, syscall.ENOSPC }}
	for _, tc := range []struct {
		name  string
		write func(fs Files, path string, b []byte) error
		calls []string
	}{
		{"P3_replace", func(fs Files, p string, b []byte) error { return fs.WriteFileAtomic(p, b, 0o644) }, []string{"sync", "rename"}},
		{"P3_create", func(fs Files, p string, b []byte) error { return fs.CreateFileAtomic(p, b, 0o644) }, []string{"sync", "link"}},
	} {
		t.Run(tc.name+"_sync_before_commit", func(t *testing.T) {
			var log []string
			path := filepath.Join(t.TempDir(), "f")
			if err := tc.write(calls(&log), path, []byte("new")); err != nil {
				t.Fatal(err)
			}
			if len(log) != 2 || log[0] != tc.calls[0] || log[1] != tc.calls[1] {
				t.Errorf("calls %v, want %v", log, tc.calls)
			}
		})
		t.Run(tc.name+"_disk_full_leaves_nothing", func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f")
			err := tc.write(diskFull, path, []byte("new"))
			if !errors.Is(err, syscall.ENOSPC) {
				t.Errorf("err %v, want ENOSPC", err)
			}
			if names, _ := os.ReadDir(dir); len(names) != 0 {
				t.Errorf("left %v, want nothing", names)
			}
			if err := tc.write(Files{}, path, []byte("new")); err != nil {
				t.Errorf("once the disk has room: %v", err)
			}
		})
	}
	t.Run("P3_create_never_replaces", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "f")
		os.WriteFile(path, []byte("first"), 0o644)
		if err := (Files{}).CreateFileAtomic(path, []byte("second"), 0o644); !errors.Is(err, os.ErrExist) {
			t.Errorf("err %v, want ErrExist", err)
		}
		if b, _ := os.ReadFile(path); string(b) != "first" {
			t.Errorf("file holds %q, want the first", b)
		}
	})
	t.Run("create_new_in_place", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "f")
		var log []string
		write := func(b string) func(io.Writer) error {
			return func(w io.Writer) error { _, err := io.WriteString(w, b); return err }
		}
		if err := calls(&log).CreateNew(path, 0o604, false, write("first")); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o604 {
			t.Errorf("created %v, %v; want mode 0604", fi, err)
		}
		if names, _ := os.ReadDir(dir); len(names) != 1 || len(log) != 0 {
			t.Errorf("files %v and calls %v; want the file alone, no rename, no sync", names, log)
		}
		if err := (Files{}).CreateNew(path, 0o644, false, write("second")); !errors.Is(err, fs.ErrExist) {
			t.Errorf("over a file: err %v, want ErrExist", err)
		}
		if b, _ := os.ReadFile(path); string(b) != "first" {
			t.Errorf("over a file: it holds %q, want the first", b)
		}
		if err := diskFull.CreateNew(filepath.Join(dir, "g"), 0o644, false, write("new")); !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("disk full: err %v, want ENOSPC", err)
		}
		if names, _ := os.ReadDir(dir); len(names) != 1 {
			t.Errorf("disk full: left %v", names)
		}
	})
}
