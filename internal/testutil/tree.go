package testutil

import (
	"bytes"
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

// DiffTrees reports, as errors of tb, each file of want (a MustTree) that
// got lacks or holds other bytes of, with the bytes around the first
// difference, and each file only got has: what says which two sites (a
// rebuild, at a time) are compared.
func DiffTrees(tb testing.TB, what string, want, got map[string][]byte) {
	tb.Helper()
	for name, w := range want {
		if g, ok := got[name]; !ok || !bytes.Equal(g, w) {
			i := 0
			for i < min(len(g), len(w)) && g[i] == w[i] {
				i++
			}
			tb.Errorf("%s: %s differs at byte %d:\nwant …%s\n got …%s", what, name, i, w[max(i-120, 0):min(i+80, len(w))], g[max(i-120, 0):min(i+80, len(g))])
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			tb.Errorf("%s: %s is not wanted", what, name)
		}
	}
}
