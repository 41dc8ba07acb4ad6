package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/internal/testutil"
	"plug.directory/prober/planner"
	"plug.directory/prober/runner"
	"plug.directory/prober/site"
)

// TestDaysOfMinutes runs the prober's minutes over days on an injected
// clock, as cron would, for 40 servers on 10 hosts: each minute planned
// (planner.PlanMinute, as plan does), run with the fold, compaction and
// scrub after it (runner.Run), and published every hour, each server's
// next check as the planner's ledger names it (the site reading the
// ledger's delta alone while its base stays: 49 of the 50). Then each
// directory of the data directory is held to its bound: plans/ to the
// minutes of spool.PlanKeep, run/minutes/ to its 48 hours, journal/
// emptied by the folds, state/ to a snapshot and 60 deltas, a day of
// results/ and of replica/ before today to one file, today's to its parts
// and merged files, each with its one second copy, and nothing set aside
// in damaged/. The output holds a few files a server.
func TestDaysOfMinutes(t *testing.T) {
	length := 50 * time.Hour // past the 48 h of the plans and markers, and two midnights
	if testing.Short() {
		t.Skip("runs 3,000 minutes: make test runs it")
	}
	t.Parallel()
	root := testutil.MemTempDir(t) // 3,000 minutes of fsyncs would take minutes on a disk
	dir, list, out := filepath.Join(root, "data"), filepath.Join(root, "servers.csv"), filepath.Join(root, "out")
	var servers []data.Server
	for i := range 40 {
		id := fmt.Sprintf("s%03d", i)
		servers = append(servers, data.Server{ID: id, Rank: i + 1, URL: "https://h" + fmt.Sprint(i%10) + ".example/" + id, Added: minute0.Add(-48 * time.Hour)})
	}
	writeList(t, list, servers)
	quiet := slog.New(slog.DiscardHandler)
	check := runner.CheckerFunc(func(_ context.Context, c data.PlannedCheck) data.Result {
		return data.Result{ID: c.ID, URL: c.URL, Host: c.Host, Reason: c.Reason, Status: data.Working, Duration: time.Second}
	})
	var logs bytes.Buffer
	debug := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	publishes, byDelta := 0, 0
	start := minute0.Truncate(24 * time.Hour).Add(22 * time.Hour) // 22:00: the first midnight comes early
	for m := start; m.Before(start.Add(length)); m = m.Add(time.Minute) {
		if _, err := planner.PlanMinute(t.Context(), planner.Config{Servers: list, Data: dir, Minute: m,
			Now: func() time.Time { return m.Add(-30 * time.Second) }, Logger: quiet}); err != nil {
			t.Fatalf("plan %s: %v", m, err)
		}
		if _, err := runner.Run(t.Context(), runner.Config{Dir: dir, Checker: check, Clock: testutil.NewJumpClock(m.Add(-time.Second)),
			Logger: quiet, PID: 4242}, m); err != nil {
			t.Fatalf("run %s: %v", m, err)
		}
		if m.Minute() == 0 {
			logs.Reset()
			if _, err := site.Publish(t.Context(), site.Config{Contact: "probe@example.org", DataDir: dir, ServersPath: list, OutDir: out,
				Now: func() time.Time { return m.Add(90 * time.Second) }, Logger: debug, Workers: 2, NoHTML: true}); err != nil {
				t.Fatalf("publish %s: %v", m, err)
			}
			publishes++
			if strings.Contains(logs.String(), "read the ledger's changes since its base") {
				byDelta++
			}
			nextChecksAsPlanned(t, dir, out, m.Add(90*time.Second))
		}
	}
	// The site read the ledger whole at the first publish and after a
	// new base only: the planner's hourly deltas in between are read alone.
	if byDelta < publishes*3/4 {
		t.Errorf("the ledger's delta read alone at %d publishes of %d", byDelta, publishes)
	}
	t.Logf("the ledger's delta read alone at %d publishes of %d", byDelta, publishes)
	last := start.Add(length - time.Minute)
	today := data.Dir(dir).ResultDay(last)

	// Count the files of each directory, as the bounds name them.
	count := map[string]int{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		switch {
		case strings.HasPrefix(rel, "plans/") && strings.HasSuffix(rel, ".jsonl"):
			m, ok := data.MinuteOfPlan(path)
			if !ok || m.Before(last.Add(-spool.PlanKeep)) {
				t.Errorf("%s kept: want the plans of the last %s only", rel, spool.PlanKeep)
			}
			count["plans/*/*.jsonl"]++
		case strings.HasPrefix(rel, "results/") || strings.HasPrefix(rel, "replica/"):
			if !strings.HasSuffix(rel, ".parquet") {
				count[rel]++ // the scrub's cursor
				break
			}
			tree, _, _ := strings.Cut(rel, "/")
			if filepath.Dir(path) == today || filepath.Dir(path) == filepath.Join(dir, "replica", filepath.Base(today)) {
				count[tree+" today"]++
			} else {
				count[tree+" "+filepath.Base(filepath.Dir(path))]++
			}
		case strings.HasPrefix(rel, "site/older/"):
			count["site/older/"]++
		default:
			top, _, _ := strings.Cut(rel, "/")
			count[top+"/"]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	minutesToday := int(last.Sub(last.Truncate(24*time.Hour))/time.Minute) + 1
	bounds := map[string]int{
		"plans/*/*.jsonl": int(spool.PlanKeep/time.Minute) + 1,
		"plans/":          3,                                                                      // the ledger, its delta and the planners' lock
		"run/":            int(48*time.Hour/time.Minute) + 1 + 3,                                  // the markers, recorded.json, hosts.log and its lock
		"journal/":        0,                                                                      // every run folded
		"state/":          61,                                                                     // the snapshot and its deltas
		"results today":   runner.PartsPerCompaction + minutesToday/runner.PartsPerCompaction + 1, // parts and the merged
		"replica today":   runner.PartsPerCompaction + minutesToday/runner.PartsPerCompaction + 1,
		"damaged/":        0,
		"site/older/":     len(servers), // a server's checks older than its published history
		"site/":           4,            // the site's record and its delta, its pauses and the mark of a publish under way
	}
	for what, n := range count {
		if tree, day, ok := strings.Cut(what, " "); ok && tree == "results" && count["replica "+day] != n {
			t.Errorf("results %s: %d files, %d second copies in replica/; want one each", day, n, count["replica "+day])
		}
		max, ok := bounds[what]
		switch {
		case strings.HasPrefix(what, "results date=") || strings.HasPrefix(what, "replica date="):
			max, ok = 1, true // a day before today: compacted into one file
		case what == "replica/.scrub-cursor", what == "servers/", what == "paused/", what == "tooldefs/", what == ".fold.lock/":
			max, ok = 4, true // files of their own, a few each
		}
		if !ok {
			t.Errorf("%s: %d files, and no bound stated", what, n)
		} else if n > max {
			t.Errorf("%s: %d files after %s of minutes, want at most %d", what, n, length, max)
		}
	}
	// The output: a file or a few for each server, and the site's own.
	outFiles := map[string]int{}
	err = filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(out, path)
			top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
			outFiles[top]++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for top, n := range outFiles {
		if n > 3*len(servers) {
			t.Errorf("out/%s: %d files, want at most 3 a server", top, n)
		}
	}
	t.Logf("the output: %v", outFiles)
	if _, bad, err := history.LoadStates(dir, minute0); err != nil || len(bad) > 0 {
		t.Errorf("the state after %s: %v %v", length, err, bad)
	}
	t.Logf("files after %s of minutes: %v", length, count)
}

// nextChecksAsPlanned fails t unless each server's published file gives
// the next check the planner's ledger names (rule P1), for every one
// planned after now: a publish reads the ledger's delta alone while its
// base stays, and must miss none of the records a plan changed.
func nextChecksAsPlanned(t *testing.T, dir, out string, now time.Time) {
	t.Helper()
	l, err := spool.ReadLedger(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range l.Servers {
		if !time.Unix(s.NextDue, 0).After(now) {
			continue // due already: a file says when it estimates
		}
		b, err := os.ReadFile(filepath.Join(out, "servers", s.ID+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			NextCheck     time.Time `json:"next_check"`
			NextCheckFrom string    `json:"next_check_from"`
		}
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		if f.NextCheckFrom != "plan" || f.NextCheck.Unix() != s.NextDue {
			t.Fatalf("at %s, %s's file says its next check is %s from %q; the ledger says %s", now, s.ID, f.NextCheck, f.NextCheckFrom, time.Unix(s.NextDue, 0).UTC())
		}
	}
}
