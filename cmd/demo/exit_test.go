package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runBinary runs the built command name with args and returns its exit
// status and output.
func runBinary(t *testing.T, bin, name string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), filepath.Join(bin, name), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("%s %q: %v", name, args, err)
	return 0, "", ""
}

// TestExitConventions runs every built command as a user would and holds
// each to the one convention of docs/architecture.md: -h prints the usage on stdout
// and exits 0, bad usage exits 2 saying why on stderr (a bad flag: the
// usage, then why as the last line), a failure exits 1,
// and every command reads a time in the same forms.
func TestExitConventions(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the five commands; make test runs it")
	}
	t.Parallel()
	bin := buildCommands(t)
	dir := t.TempDir()
	foreign := filepath.Join(dir, "foreign")
	if err := os.MkdirAll(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	list := filepath.Join("..", "..", "data", "lists", "testdata", "servers", "valid.csv")
	empty := filepath.Join(dir, "empty")
	typo := filepath.Join(dir, "dta-typo")
	type tc struct {
		name   string
		args   []string
		code   int
		stdout string // in stdout
		stderr string // in stderr
	}
	failures := map[string][]string{
		"plan":    {"-servers", filepath.Join(dir, "missing.csv"), "-data", empty, "-at", "2100-01-01T00:00"},
		"run":     {"-data", empty, "-at", "2100-01-01T00:00"},
		"publish": {"-data", typo, "-servers", list, "-out", filepath.Join(dir, "site"), "-contact", "probe@demo.test"},
		"pause":   {"-repo", "o/r", "-path", "paused.txt", "-server", "a-1", "-api", "http://127.0.0.1:1/", "-timeout", "5s"},
		"demo":    {"-bin", bin, "-dir", foreign},
	}
	for _, name := range []string{"plan", "run", "publish", "pause", "demo"} {
		for _, c := range []tc{
			{"help", []string{"-h"}, 0, "usage", ""},
			{"help_long", []string{"--help"}, 0, "usage", ""},
			{"unknown_flag", []string{"-no-such-flag"}, 2, "", "flag provided but not defined: -no-such-flag"},
			{"argument", []string{"extra"}, 2, "", name + `: unexpected argument "extra"`},
			{"failure", failures[name], 1, "", name + ": "},
		} {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				code, stdout, stderr := runBinary(t, bin, name, c.args...)
				if code != c.code || !strings.Contains(strings.ToLower(stdout), c.stdout) || !strings.Contains(stderr, c.stderr) {
					t.Errorf("%s %q: exit %d, stdout %q, stderr %q; want exit %d, %q in stdout, %q in stderr",
						name, c.args, code, stdout, stderr, c.code, c.stdout, c.stderr)
				}
				if c.code == 0 && stderr != "" {
					t.Errorf("%s %q: stderr %q, want nothing", name, c.args, stderr)
				}
				// A bad flag: the usage, then the error as the last line,
				// which a log's last line quotes (minute.sh).
				want := name + ": flag provided but not defined: -no-such-flag"
				if c.name == "unknown_flag" && (!strings.HasPrefix(stderr, "usage: "+name+" ") || !strings.HasSuffix(stderr, "\n"+want+"\n")) {
					t.Errorf("%s %q: stderr %q; want the usage (usage: %s ...) first and %q last", name, c.args, stderr, name, want)
				}
			})
		}
	}
	for _, c := range []tc{
		{"run_url_help", []string{"-url", "-h"}, 0, "usage: run -url", ""},
		{"run_url_flag", []string{"-url", "-json"}, 2, "", "want the server's address"},
		{"publish_at_tomorrow", []string{"-data", typo, "-servers", list, "-out", dir, "-contact", "probe@demo.test", "-at", "tomorrow"}, 2, "",
			`invalid value "tomorrow" for flag -at: not a time: want 2026-12-02T10:33 (UTC), or RFC 3339`},
		{"run_past_minute_no_plan_hint", []string{"-data", empty, "-at", "2020-01-01T00:00"}, 1, "", "the minute has begun"},
	} {
		t.Run("run/"+c.name, func(t *testing.T) {
			name := strings.SplitN(c.name, "_", 2)[0]
			code, stdout, stderr := runBinary(t, bin, name, c.args...)
			if code != c.code || !strings.Contains(stdout, c.stdout) || !strings.Contains(stderr, c.stderr) {
				t.Errorf("%s %q: exit %d, stdout %q, stderr %q; want exit %d, %q in stdout, %q in stderr",
					name, c.args, code, stdout, stderr, c.code, c.stdout, c.stderr)
			}
		})
	}
	if _, err := os.Stat(typo); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("publish made the data directory it refused: %v", err)
	}

	// The hint of a run without a plan is a plan command that works, and
	// plan then reads the minute in run's short form.
	t.Run("run_hint_plans", func(t *testing.T) {
		code, _, stderr := runBinary(t, bin, "run", "-data", empty, "-at", "2100-01-01T00:00")
		m := regexp.MustCompile(`plan -at (\S+)\)`).FindStringSubmatch(stderr)
		if code != 1 || m == nil || m[1] != "2100-01-01T00:00" {
			t.Fatalf("run: exit %d, stderr %q; want a plan -at hint", code, stderr)
		}
		if code, stdout, stderr := runBinary(t, bin, "plan", "-servers", list, "-data", empty, "-at", m[1]); code != 0 {
			t.Fatalf("plan -at %s: exit %d, stdout %q, stderr %q", m[1], code, stdout, stderr)
		}
		if code, stdout, stderr := runBinary(t, bin, "run", "-data", empty, "-at", m[1]); code == 1 && strings.Contains(stderr, "no plan") {
			t.Errorf("run after the hinted plan: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	})
}
