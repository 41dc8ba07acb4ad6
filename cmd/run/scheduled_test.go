package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/cmd/internal/cli"
	"plug.directory/prober/data"
)

// TestScheduled runs a planned minute as a user would: run, then a second
// run of the same minute, which refuses.
func TestScheduled(t *testing.T) {
	t.Parallel()
	srv := startServer(t, mcpHandler(0))
	dir := t.TempDir()
	// This minute, planned a few seconds ago: the run starts late and
	// says so.
	minute := time.Now().UTC().Truncate(time.Minute)
	at := minute
	if err := data.WritePlan(dir, minute, []data.PlannedCheck{
		{At: at, Due: at, ID: "demo", URL: srv.url, Host: "mcp.test", Reason: data.ReasonNew, Rank: 1},
	}); err != nil {
		t.Fatal(err)
	}
	args := []string{"-data", dir, "-at", minute.Format("2006-01-02T15:04"), "-lab", "-resolve", srv.resolve, "-ca-file", srv.caFile}
	code, stdout, stderr := runArgs(t, args...)
	if code != 0 || !strings.Contains(stdout, "1 planned, 1 completed (1 working)") {
		t.Fatalf("run: exit %d, stdout %q, stderr %q; want 1 working", code, stdout, stderr)
	}
	rs, bad, err := data.ReadHistory(dir, minute, minute)
	if err != nil || len(bad) > 0 || len(rs) != 1 {
		t.Fatalf("history: %v %v %d results, want 1", err, bad, len(rs))
	}
	if r := rs[0]; r.Status != data.Working || r.Lateness < 0 || !r.Planned.Equal(at) || r.Reason != data.ReasonNew {
		t.Errorf("result %+v: want working, planned %v, lateness recorded", r, at)
	}

	code, _, stderr = runArgs(t, args...)
	if code != 1 || !strings.Contains(stderr, "this minute was already run") || !strings.Contains(stderr, "a minute runs once") {
		t.Errorf("second run: exit %d, stderr %q; want a clear refusal", code, stderr)
	}
}

func TestScheduledUsage(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		args []string
		want string
	}{
		"no_data":          {nil, "-data DIR is required"},
		"bad_minute":       {[]string{"-data", "d", "-at", "10:33"}, `invalid value "10:33" for flag -at: not a time`},
		"not_whole_minute": {[]string{"-data", "d", "-at", "2026-12-02T10:33:05Z"}, "not a whole minute"},
		"loop_without_out": {[]string{"-data", "d", "-loop", "-servers", "s.csv"}, "-loop needs -servers FILE and -out DIR"},
		"servers_no_loop":  {[]string{"-data", "d", "-servers", "s.csv"}, "for -loop only"},
		"N10_timeout_45s":  {[]string{"-data", "d", "-timeout", "46s"}, "at most 45s"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := runArgs(t, c.args...)
			if code != cli.ExitUsage || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, cli.ExitUsage, c.want)
			}
		})
	}
}

// TestLoopPlanStep: -loop plans each minute with the plan command itself,
// with the minute it is about to run.
func TestLoopPlanStep(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	argsFile := filepath.Join(dir, "args")
	script := filepath.Join(dir, "plan")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$@\" > "+argsFile+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := scheduledConfig{Data: "d", Servers: "s.csv", Paused: "p.txt", Out: "o", Loop: true, PlanCmd: script}
	minute := time.Date(2026, 12, 2, 10, 34, 0, 0, time.UTC)
	if err := planStep(cfg, io.Discard, io.Discard)(t.Context(), minute); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(b)), "-servers s.csv -data d -at 2026-12-02T10:34:00Z -paused p.txt"; got != want {
		t.Errorf("plan ran with %q, want %q", got, want)
	}
	cfg.PlanCmd = filepath.Join(dir, "missing")
	if err := planStep(cfg, io.Discard, io.Discard)(t.Context(), minute); err == nil || !strings.Contains(err.Error(), "plan 2026-12-02T10:34:00Z") {
		t.Errorf("missing plan command: err %v, want one naming the minute", err)
	}
}
