package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/pause"
	"plug.directory/prober/pause/pausetest"
	"plug.directory/prober/planner"
	"plug.directory/prober/site"
)

// TestEndToEnd_S8_pause_and_resume follows a pause request from the pull
// request to the plan: opened by `pause`, accepted by `pause -check-pr`,
// merged, fetched from GitHub as cmd/plan does each minute, and the paused
// server is in no plan from the first minute after the merge (rule S8) while
// the other one keeps its schedule, and the next publish shows it paused
// (rule P4); a second pull request that removes the line resumes its checks
// at its usual pace.
func TestEndToEnd_S8_pause_and_resume(t *testing.T) {
	t.Setenv(pause.TokenEnv, "tok")
	f := pausetest.New(t, "plugdir", "directory", map[string]string{"paused.txt": "# paused at the owner's request\n"})
	csv := mustServersCSV(t)
	servers, _, err := lists.ReadServers(csv)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	var clock time.Time
	now := func() time.Time { return clock }
	spec, err := pause.ParseSpec("github:plugdir/directory/paused.txt@main")
	if err != nil {
		t.Fatal(err)
	}
	ledger := spool.NewLedger()
	p := &planner.Planner{Now: now}

	// plan plans minutes [from, to) as cron would, fetching the list first,
	// and counts the checks of each server.
	plan := func(from, to int) map[string]int {
		t.Helper()
		counts := map[string]int{}
		for m := from; m < to; m++ {
			at := start.Add(time.Duration(m) * time.Minute)
			clock = at.Add(-time.Second)
			client, err := pause.NewClient(f.URL(), "tok", nil)
			if err != nil {
				t.Fatal(err)
			}
			path, warn, err := (&pause.Fetcher{Client: client, DataDir: dir, Now: now}).Fetch(context.Background(), spec)
			if err != nil || warn != nil {
				t.Fatalf("minute %d: fetch: %v %v", m, err, warn)
			}
			list, err := lists.ReadPausedList(path)
			if err != nil {
				t.Fatalf("minute %d: read %s: %v", m, path, err)
			}
			rep, err := p.Plan(at, planner.Input{Servers: servers, Paused: list}, ledger)
			if err != nil {
				t.Fatalf("minute %d: plan: %v", m, err)
			}
			for _, c := range rep.Checks {
				counts[c.ID]++
			}
		}
		return counts
	}

	// Servers listed at the first plan wait for their slot: an hour covers
	// both.
	// publish publishes the site from the copy plan read, as
	// docs/pause-requests.md tells the operator to, and returns each server's label.
	siteDir := t.TempDir()
	publish := func() map[string]string {
		t.Helper()
		cfg := site.Config{Contact: "probe@example.org", DataDir: dir, ServersPath: csv, PausedPath: data.Dir(dir).PausedCopy(), OutDir: siteDir, Now: now, NoHTML: true}
		if _, err := site.Publish(context.Background(), cfg); err != nil {
			t.Fatalf("publish: %v", err)
		}
		labels := map[string]string{}
		for _, s := range servers {
			b, err := os.ReadFile(filepath.Join(siteDir, "servers", s.ID+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var f struct{ Label string }
			if err := json.Unmarshal(b, &f); err != nil {
				t.Fatal(err)
			}
			labels[s.ID] = f.Label
		}
		return labels
	}

	if got := plan(0, 65); got["alpha"] == 0 || got["delta"] == 0 {
		t.Fatalf("before the request: checks %v, want both servers planned", got)
	}

	out, _, err := runPause(f, "-server", "delta", "-note", "owner asked by email", "-servers", csv)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "opened pull request #1:") {
		t.Fatalf("open: %s", out)
	}
	if out, _, err := runPause(f, "-check-pr", "1", "-servers", csv); err != nil {
		t.Fatalf("check of the request: %v\n%s", err, out)
	}
	f.Merge(1)

	// 70 minutes: longer than the hourly cadence both servers are on.
	if got := plan(65, 135); got["delta"] != 0 || got["alpha"] == 0 {
		t.Errorf("after the merge: checks %v, want delta never planned and alpha still", got)
	}
	if got := publish(); got["delta"] != data.Paused.Label() || got["alpha"] == data.Paused.Label() {
		t.Errorf("after the merge: published %v, want delta paused (rule P4) and alpha not", got)
	}

	f.Commit("resume", "paused.txt", "# paused at the owner's request\n")
	resume := f.OpenPull("main", "resume")
	out, _, err = runPause(f, "-check-pr", "2", "-servers", csv)
	if err != nil || !strings.Contains(out, "(resumes delta)") || resume != 2 {
		t.Fatalf("check of the resume: %v\n%s", err, out)
	}
	f.Merge(resume)
	if got := plan(135, 205); got["delta"] == 0 || got["alpha"] == 0 {
		t.Errorf("after the resume: checks %v, want delta planned again", got)
	}
	if got := publish(); got["delta"] == data.Paused.Label() {
		t.Errorf("after the resume: published %v, want delta no longer paused", got)
	}
}
