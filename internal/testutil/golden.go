package testutil

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update is the -update flag of every test binary that imports the package:
// `go test ./pkg -update` rewrites that package's golden files.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Updating reports whether the test binary runs with -update.
func Updating() bool { return *update }

// Golden compares got with the golden file at path (slash-separated,
// relative to the package, under testdata/), or writes got there under
// -update. A difference or a missing file fails the test, naming the first
// line that differs.
func Golden(tb testing.TB, path string, got []byte) {
	tb.Helper()
	path = filepath.FromSlash(path)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("read golden file (go test -update writes it): %v", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	n := 0
	for n < len(gl) && n < len(wl) && bytes.Equal(gl[n], wl[n]) {
		n++
	}
	line := func(ls [][]byte) string {
		if n < len(ls) {
			return string(ls[n])
		}
		return "(end of file)"
	}
	tb.Errorf("%s differs from the golden file at line %d (go test -update rewrites it):\n got: %.500s\nwant: %.500s\n--- got (%d bytes)\n%.4000s", path, n+1, line(gl), line(wl), len(got), got)
}
