package pause

import (
	"testing"

	"github.com/google/go-github/v60/github"

	"plug.directory/prober/pause/pausetest"
)

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
