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
