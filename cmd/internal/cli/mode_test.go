package cli

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
)

// TestHasFlag: a flag in any of its forms, not a longer flag, not a value
// that only spells the name, nothing after "--".
func TestHasFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"-url", "x"}, true},
		{[]string{"--url=x"}, true},
		{[]string{"-lab", "-url=x"}, true},
		{[]string{"-data", "d"}, false},
		{[]string{"-urls"}, false},
		{[]string{"--", "-url"}, false},
		{[]string{"-data", "url"}, false},
	} {
		if got := HasFlag(tc.args, "url"); got != tc.want {
			t.Errorf("HasFlag(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// TestParseMode: the usage lines then the defaults on -h; what valid
// reports about the parsed flags is bad usage.
func TestParseMode(t *testing.T) {
	for _, c := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"-h"}, ExitOK, "usage: x -data DIR\n       (x -old is the same)\n  -data", ""},
		{nil, ExitUsage, "", "x: -data DIR is required"},
		{[]string{"-data", "d"}, ExitOK, "", ""},
	} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		dir := fs.String("data", "", "data `DIR`")
		var stdout, stderr bytes.Buffer
		err := ParseMode(fs, c.args, &stdout, &stderr, "usage: x -data DIR\n       (x -old is the same)", func() error {
			if *dir == "" {
				return errors.New("-data DIR is required")
			}
			return nil
		})
		code := ExitCode("x", err, &stderr)
		if code != c.code || !strings.HasPrefix(stdout.String(), c.stdout) || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d, %q, %q", c.args, code, stdout.String(), stderr.String(), c.code, c.stdout, c.stderr)
		}
	}
}
