package testutil

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// MustTree returns every file under root, by its slash path relative to
// root, with its bytes: what a test compares of a whole output directory.
func MustTree(tb testing.TB, root string) map[string][]byte {
	tb.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		b, err := os.ReadFile(path)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// CopyTree copies the directory from, its directories and files, into to,
// which must not exist: a fixture built once and given to each test that
// changes it.
func CopyTree(tb testing.TB, from, to string) {
	tb.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		tb.Fatal(err)
	}
}
