package cli

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"
)

// TestParseTime: every command reads a time in the same forms, and a time
// with a zone is the same instant in UTC.
func TestParseTime(t *testing.T) {
	want := time.Date(2026, 12, 2, 10, 33, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Time
	}{
		{"2026-12-02T10:33", want},
		{"2026-12-02T10:33:00", want},
		{"2026-12-02T10:33Z", want},
		{"2026-12-02T10:33:00Z", want},
		{"2026-12-02T11:33+01:00", want},
		{"2026-12-02T11:33:00+01:00", want},
		{"2026-12-02T05:03:00-05:30", want},
		{"2026-12-02T10:33:07.250Z", want.Add(7250 * time.Millisecond)},
		{"2030-01-01T00:00", time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		got, err := ParseTime(c.in)
		if err != nil || !got.Equal(c.want) || got.Location() != time.UTC {
			t.Errorf("ParseTime(%q) = %v, %v; want %v in UTC", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "tomorrow", "2026-12-02", "2026-12-02 10:33", "10:33", "2026-13-02T10:33", "2026-12-02T10:33+1"} {
		if got, err := ParseTime(in); err == nil || !strings.Contains(err.Error(), TimeForms) {
			t.Errorf("ParseTime(%q) = %v, %v; want an error naming the forms", in, got, err)
		}
	}
}

// TestTimeVar: a flag value that is not a time is a usage error naming the
// flag, the value and the forms, not Go's layout error.
func TestTimeVar(t *testing.T) {
	fs := flag.NewFlagSet("publish", flag.ContinueOnError)
	var at time.Time
	TimeVar(fs, &at, "at", "time")
	var stdout, stderr bytes.Buffer
	err := Parse(fs, []string{"-at", "tomorrow"}, &stdout, &stderr)
	if code := ExitCode("publish", err, &stderr); code != ExitUsage {
		t.Fatalf("exit %d, want %d", code, ExitUsage)
	}
	want := `invalid value "tomorrow" for flag -at: not a time: want ` + TimeForms
	if !strings.Contains(stderr.String(), want) || strings.Contains(stderr.String(), "cannot parse") {
		t.Errorf("stderr %q; want %q", stderr.String(), want)
	}
}

// TestParse: -h prints the usage on stdout and exits 0; a bad flag or an
// argument exits 2 with the reason on stderr, its last line (after the
// usage, for a bad flag), so that a log's last line quotes it; a plain
// error exits 1, and errors joined are one line.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		name       string
		args       []string
		code       int
		stdout     string
		stderr     string
		wantParsed bool
	}{
		{"help", []string{"-h"}, ExitOK, "Usage of cmd", "", false},
		{"help_long", []string{"-help"}, ExitOK, "Usage of cmd", "", false},
		{"unknown_flag", []string{"-nope"}, ExitUsage, "", "Usage of cmd", false},
		{"bad_value", []string{"-n", "x"}, ExitUsage, "", "Usage of cmd", false},
		{"argument", []string{"-n", "1", "extra"}, ExitUsage, "", `cmd: unexpected argument "extra"`, false},
		{"ok", []string{"-n", "1"}, ExitOK, "", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
			n := fs.Int("n", 0, "a number")
			var stdout, stderr bytes.Buffer
			err := Parse(fs, c.args, &stdout, &stderr)
			code := ExitCode("cmd", err, &stderr)
			if code != c.code {
				t.Errorf("exit %d, want %d (err %v)", code, c.code, err)
			}
			if !strings.Contains(stdout.String(), c.stdout) || (c.stdout == "" && stdout.Len() > 0) {
				t.Errorf("stdout %q, want %q", stdout.String(), c.stdout)
			}
			if !strings.Contains(stderr.String(), c.stderr) || (c.stderr == "" && stderr.Len() > 0) {
				t.Errorf("stderr %q, want %q", stderr.String(), c.stderr)
			}
			if want := map[string]string{
				"unknown_flag": "cmd: flag provided but not defined: -nope",
				"bad_value":    `cmd: invalid value "x" for flag -n: parse error`,
				"argument":     `cmd: unexpected argument "extra" (every option is a flag: -h lists them)`,
			}[c.name]; want != "" && lastLine(stderr.String()) != want {
				t.Errorf("stderr ends %q, want %q", lastLine(stderr.String()), want)
			}
			if c.wantParsed && *n != 1 {
				t.Errorf("-n = %d, want 1", *n)
			}
		})
	}
	var stderr bytes.Buffer
	if code := ExitCode("cmd", errors.New("disk full"), &stderr); code != ExitFailure || stderr.String() != "cmd: disk full\n" {
		t.Errorf("plain error: exit %d, stderr %q", code, stderr.String())
	}
	stderr.Reset()
	joined := errors.Join(errors.New("read ranked list: no such file"), errors.New("read paused list: no such file"))
	if code := ExitCode("cmd", joined, &stderr); code != ExitFailure || stderr.String() != "cmd: read ranked list: no such file; read paused list: no such file\n" {
		t.Errorf("joined errors: exit %d, stderr %q; want one line", code, stderr.String())
	}
}

// lastLine returns the last line of s, without its newline.
func lastLine(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}
