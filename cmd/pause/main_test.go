package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/pause"
	"plug.directory/prober/pause/pausetest"
)

const list = "# paused\nalpha\n"

// mustServersCSV writes a ranked list of alpha and delta and returns its path.
func mustServersCSV(tb testing.TB) string {
	tb.Helper()
	var b bytes.Buffer
	added := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := lists.WriteServers(&b, []data.Server{
		{ID: "alpha", Rank: 1, URL: "https://alpha.example/mcp", Added: added},
		{ID: "delta", Rank: 2, URL: "https://delta.example/mcp", Added: added},
	}); err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "servers.csv")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

func runPause(f *pausetest.GitHub, args ...string) (stdout, stderr string, err error) {
	var out, errb bytes.Buffer
	err = run(context.Background(), append([]string{"-api", f.URL(), "-repo", "plugdir/directory", "-path", "paused.txt"}, args...), &out, &errb)
	return out.String(), errb.String(), err
}

func TestOpen_R1(t *testing.T) {
	t.Setenv(pause.TokenEnv, "secret")
	f := pausetest.New(t, "plugdir", "directory", map[string]string{"paused.txt": list})
	out, _, err := runPause(f, "-server", "delta", "-note", "report form, ticket 9", "-servers", mustServersCSV(t))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "opened pull request #1: ") || !strings.Contains(out, "branch: pause/delta-") {
		t.Errorf("stdout = %q", out)
	}
	branch := strings.TrimPrefix(strings.Split(out, "\n")[1], "branch: ")
	got, _ := f.File(branch, "paused.txt")
	if !strings.HasPrefix(got, list+"delta  # ") || !strings.HasSuffix(got, " report form, ticket 9\n") {
		t.Errorf("list on %s = %q", branch, got)
	}
	for _, r := range f.TakeRequests() {
		if r.Auth != "Bearer secret" {
			t.Errorf("%s %s sent Authorization %q, want the token from %s", r.Method, r.URI, r.Auth, pause.TokenEnv)
		}
	}

	t.Run("R1_refuses_a_server_already_listed", func(t *testing.T) {
		_, _, err := runPause(f, "-server", "alpha")
		if !errors.Is(err, pause.ErrAlreadyListed) {
			t.Errorf("err = %v, want ErrAlreadyListed", err)
		}
	})
	t.Run("refuses_a_server_not_in_the_ranked_list", func(t *testing.T) {
		_, _, err := runPause(f, "-server", "zeta", "-servers", mustServersCSV(t))
		if !errors.Is(err, pause.ErrNotListed) {
			t.Errorf("err = %v, want ErrNotListed", err)
		}
	})
}

func TestCheckPR(t *testing.T) {
	f := pausetest.New(t, "plugdir", "directory", map[string]string{"paused.txt": list})
	f.Commit("good", "paused.txt", list+"delta\n")
	good := f.OpenPull("main", "good")
	f.Commit("bad", "paused.txt", list+"zeta\n")
	bad := f.OpenPull("main", "bad")
	servers := mustServersCSV(t)

	out, _, err := runPause(f, "-check-pr", "1", "-servers", servers)
	if err != nil || out != "pull request #1 changing paused.txt: acceptable\n+ paused.txt:3: delta  (pauses delta)\n" || good != 1 {
		t.Errorf("acceptable PR: %v\n%s", err, out)
	}
	out, _, err = runPause(f, "-check-pr", "2", "-servers", servers)
	if !errors.Is(err, errRejected) || !strings.Contains(out, "not acceptable") || !strings.Contains(out, `"zeta" names no listed server`) || bad != 2 {
		t.Errorf("bad PR: %v\n%s", err, out)
	}
	_, _, err = runPause(f, "-check-pr", "3", "-servers", servers)
	if err == nil || errors.Is(err, errRejected) || !strings.Contains(err.Error(), "404") {
		t.Errorf("missing PR: err = %v, want GitHub's 404, not a verdict", err)
	}
}

func TestConfig_Validate(t *testing.T) {
	base := config{Repo: "o/r", Path: "p.txt", Server: "x", Timeout: time.Minute}
	for _, tc := range []struct {
		name string
		edit func(*config)
		want string
	}{
		{"open", func(c *config) {}, ""},
		{"check", func(c *config) { c.Server, c.CheckPR, c.Servers = "", 4, "s.csv" }, ""},
		{"no_repo", func(c *config) { c.Repo = "" }, "-repo"},
		{"bad_repo", func(c *config) { c.Repo = "o/r/x" }, "OWNER/REPO"},
		{"no_path", func(c *config) { c.Path = "" }, "-path"},
		{"no_server", func(c *config) { c.Server = "" }, "-server"},
		{"check_without_servers", func(c *config) { c.Server, c.CheckPR = "", 4 }, "-servers"},
		{"check_with_server", func(c *config) { c.CheckPR, c.Servers = 4, "s.csv" }, "does not take"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.edit(&c)
			err := c.Validate()
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}
