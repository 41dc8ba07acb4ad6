package pause

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-github/v60/github"

	"plug.directory/prober/pause/pausetest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// MustGolden compares got with testdata/name, or rewrites it with -update.
func MustGolden(tb testing.TB, name string, got []byte) {
	tb.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		tb.Errorf("%s differs from the golden file (run with -update if intended)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

const fakeOwner, fakeRepo = "plugdir", "directory"

// newFake starts a fake GitHub holding the directory repository.
func newFake(tb testing.TB, files map[string]string) *pausetest.GitHub {
	tb.Helper()
	return pausetest.New(tb, fakeOwner, fakeRepo, files)
}

// fakeClient returns a client of the fake, sending token.
func fakeClient(tb testing.TB, f *pausetest.GitHub, token string) *github.Client {
	tb.Helper()
	c, err := NewClient(f.URL(), token, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}
