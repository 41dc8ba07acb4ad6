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
	"plug.directory/prober/data/history"
	"plug.directory/prober/data/spool"
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
	if err := spool.WritePlan(dir, minute, []data.PlannedCheck{
		{At: at, Due: at, ID: "demo", URL: srv.url, Host: "mcp.test", Reason: data.ReasonNew, Rank: 1},
	}); err != nil {
		t.Fatal(err)
	}
	args := []string{"-data", dir, "-at", minute.Format("2006-01-02T15:04"), "-lab", "-resolve", srv.resolve, "-ca-file", srv.caFile}
	code, stdout, stderr := runArgs(t, args...)
	if code != 0 || !strings.Contains(stdout, "1 planned, 1 completed (1 working)") {
		t.Fatalf("run: exit %d, stdout %q, stderr %q; want 1 working", code, stdout, stderr)
	}
	rs, bad, err := history.ReadHistory(dir, minute, minute)
	if err != nil || len(bad) > 0 || len(rs) != 1 {
		t.Fatalf("history: %v %v %d results, want 1", err, bad, len(rs))
	}
	if r := rs[0]; r.Status != data.Working || r.Lateness < 0 || !r.Planned.Equal(at) || r.Reason != data.ReasonNew {
		t.Errorf("result %+v: want working, planned %v, lateness recorded", r, at)
	}

	if rec, err := spool.LastMinuteRecorded(dir); err != nil || !rec.Equal(minute) {
		t.Errorf("last minute recorded %v, %v; want %v (status.json)", rec, err, minute)
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
		"servers_no_loop":  {[]string{"-data", "d", "-servers", "s.csv"}, "flag provided but not defined: -servers"},
		"loop_at":          {[]string{"-loop", "-data", "d", "-servers", "s.csv", "-out", "o", "-at", "2026-12-02T10:33"}, "flag provided but not defined: -at"},
		"check_data":       {[]string{"check", "https://mcp.test/mcp", "-data", "d"}, "flag provided but not defined: -data"},
		"two_problems":     {[]string{"minute", "-timeout", "46s", "-concurrency", "-1"}, "-data DIR is required (or run check URL to check one server now); -concurrency -1: want a positive number; -timeout 46s"},
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

// TestLoopPlanStep: -loop plans each minute in process, with
// planner.PlanMinute as cmd/plan does, the minute it is about to run.
func TestLoopPlanStep(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	list := filepath.Join(dir, "servers.csv")
	if err := os.WriteFile(list, []byte("id,rank,url,added\na,1,https://a.example/mcp,2026-01-01T00:00:00Z\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := loopConfig{checksConfig: checksConfig{Data: filepath.Join(dir, "data")}, Servers: list, Out: "o"}
	minute := time.Now().UTC().Truncate(time.Minute).Add(2 * time.Minute)
	var out strings.Builder
	plan, err := planStep(cfg, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := plan(t.Context(), minute); err != nil {
		t.Fatal(err)
	}
	checks, _, err := spool.ReadPlan(cfg.Data, minute)
	if err != nil {
		t.Errorf("the loop's plan step wrote no plan of %s: %v", minute, err)
	}
	// Its one server is planned when its slot falls in that minute (rule
	// S2): the line counts what the plan holds.
	if want := minute.Format(time.RFC3339) + ": " + data.Plural(len(checks), "check") + " ("; !strings.HasPrefix(out.String(), want) {
		t.Errorf("plan step printed %q, want it to start %q", out.String(), want)
	}
	// A fresh data directory: there, no last good list stands in for a
	// missing one.
	cfg.Servers, cfg.Data = filepath.Join(dir, "missing.csv"), filepath.Join(dir, "fresh")
	if plan, err = planStep(cfg, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := plan(t.Context(), minute.Add(time.Minute)); err == nil || !strings.Contains(err.Error(), "read ranked list") {
		t.Errorf("missing ranked list: err %v, want one naming it", err)
	}
}
