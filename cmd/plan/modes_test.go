package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"plug.directory/prober/cmd/internal/cli"
)

// TestModes: each mode has its own flags and usage, and
// every command line in use picks the mode it always did, its flags all
// parsed there (the docs', the demo's, deploy/minute.sh's, the tests'),
// as do the modes' names. "-h" at the end prints the usage of the mode
// picked, after every flag before it was taken.
func TestModes(t *testing.T) {
	const (
		minute   = "usage: plan -servers FILE"
		simulate = "usage: plan simulate 24h"
		generate = "usage: plan generate N"
		rebuild  = "usage: plan rebuild-state -data DIR"
	)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-servers", "var/servers.csv", "-paused", "var/paused.txt", "-data", "var/data"}, minute},                                         // the docs
		{[]string{"-servers", "servers.csv", "-paused", "paused.txt", "-data", "var/data", "-at", "2026-12-02T10:33", "-first-check-soon"}, minute}, // minute.sh
		{[]string{"-servers", "s", "-paused", "github:OWNER/REPO/paused.txt@main", "-data", "d", "-github-api", "http://127.0.0.1:1/", "-accept-shrink", "-v"}, minute},
		{[]string{"-generate", "100000", "-out", "var/sim-servers.csv"}, generate}, // the docs
		{[]string{"-generate", "10000", "-shared", "0.2", "-distinct", "-out", "o", "-base", "2100-06-01T00:00:00Z", "-late", "0", "-big-host", "0", "-hosts", "10", "-seed", "3"}, generate},
		{[]string{"generate", "500", "-out", "o"}, generate},
		{[]string{"-simulate", "24h", "-servers", "var/sim-servers.csv", "-data", "var/sim-data", "-failing", "0.05"}, simulate}, // the docs
		{[]string{"-simulate", "3h", "-servers", "s", "-data", "d", "-at", "2100-06-01T00:00:00Z", "-churn", "0.01", "-seed", "2", "-paused", "p"}, simulate},
		{[]string{"simulate", "1h", "-servers", "s", "-data", "d"}, simulate},
		{[]string{"-rebuild-state", "-data", "DIR"}, rebuild}, // the docs
		{[]string{"rebuild-state", "-data", "DIR"}, rebuild},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append(c.args, "-h"), &stdout, &stderr)
		if code := cli.ExitCode("plan", err, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), c.want) || stderr.Len() > 0 {
			t.Errorf("%q -h: exit %d, stdout %.80q, stderr %q; want 0 and %q", c.args, code, stdout.String(), stderr.String(), c.want)
		}
	}
}

// TestModeUsage: each mode reports every problem of its flags, whatever
// their order, and a flag of another mode is not taken.
func TestModeUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"-at", "2100-01-01T00:00:30Z"}, []string{"-servers FILE is required", "-data DIR is required", "not a whole minute"}},
		{[]string{"-simulate", "90s", "-failing", "0.9"}, []string{"-simulate 1m30s: want a positive whole number of minutes", "-failing 0.9", "-servers FILE is required", "-data DIR is required"}},
		{[]string{"-simulate", "1h", "-servers", "s", "-data", "d", "-paused", "github:o/r/p"}, []string{"-simulate takes a local -paused FILE"}},
		{[]string{"-generate", "-1", "-shared", "2"}, []string{"-generate needs a positive number of servers", "-generate needs -out FILE", "-shared 2"}},
		{[]string{"-rebuild-state"}, []string{"-rebuild-state needs -data DIR"}},
		{[]string{"-servers", "s", "-data", "d", "-failing", "0.1"}, []string{"flag provided but not defined: -failing"}},
		{[]string{"-generate", "5", "-out", "o", "-simulate", "1h"}, []string{"flag provided but not defined: -simulate"}},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), c.args, &stdout, &stderr)
		var ee *cli.ExitError
		if !errors.As(err, &ee) || ee.Code != cli.ExitUsage {
			t.Errorf("%q: err %v, want a usage error", c.args, err)
			continue
		}
		cli.ExitCode("plan", err, &stderr)
		for _, w := range c.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%q: stderr %q, want %q", c.args, stderr.String(), w)
			}
		}
	}
}
