package faults

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/internal/testutil"
	"plug.directory/prober/runner"
	"plug.directory/prober/site"
)

// TestRebuildEqualsIncremental (issue 18 point 2): a day of hourly runs and
// publishes with faults (runs killed before their fold, whose journals the
// next run folds and publish reads meanwhile at nanoseconds; parts with a
// flipped byte restored by the scrub; the day compacted; a server paused
// and resumed) ends with a site that a full rebuild from the data
// directory alone, at the same time, gives byte for byte. -short runs 9
// hours from 18:00, which still hold each fault (a killed run folded after
// midnight), the pause and its end and midnight's compaction; the full run
// (make test) runs the 24 from noon.
func TestRebuildEqualsIncremental(t *testing.T) {
	t.Parallel() // its own directories; mostly waits for fsyncs, which overlap
	hours, start := 24, minute0.Add(-24*time.Hour)
	if testing.Short() {
		hours, start = 9, minute0.Add(-18*time.Hour)
	}
	servers := baseServers()
	root := t.TempDir()
	dir := filepath.Join(root, "data")
	list := filepath.Join(root, "servers.csv")
	writeList(t, list, servers)
	paused := filepath.Join(root, "paused.txt")
	os.WriteFile(paused, nil, 0o644)
	var now time.Time
	cfg := site.Config{Contact: "probe@example.org", DataDir: dir, ServersPath: list, PausedPath: paused, OutDir: filepath.Join(root, "out"),
		Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler), Workers: 2, NoHTML: true}
	for h := range hours {
		at := start.Add(time.Duration(h) * time.Hour)
		name := data.RunJournal(at, 4242)
		j, err := spool.CreateJournal(dir, name)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range servers {
			started := at.Add(time.Duration(i)*time.Second + time.Duration(h*1000+i)*time.Microsecond + 789) // nanoseconds, as a run records them
			o := data.Outcomes[(i+h/5)%5]
			r := data.Result{ID: s.ID, URL: s.URL, Host: s.Host(), Reason: data.ReasonRoutine, Status: o, Detail: "d " + s.ID,
				Started: started, Finished: started.Add(time.Second), Duration: time.Second}
			if o == data.Working {
				r.Tools, r.ToolCount = []string{"search"}, 1
				r.ToolsHash, r.ToolDefs = spool.FingerprintTools([]spool.ToolDef{{Name: "search", Description: fmt.Sprint("v", h/6)}})
			}
			if err := j.Append(r); err != nil {
				t.Fatal(err)
			}
		}
		j.Close()
		// The store of definitions ages its sets by their files' times:
		// on the test's clock, in 2030, they are as new as its runs.
		sets, _ := filepath.Glob(filepath.Join(data.Dir(dir).ToolDefs(), "*"))
		for _, set := range sets {
			os.Chtimes(set, at, at)
		}
		switch h {
		case 3:
			os.WriteFile(paused, []byte(servers[2].ID+"\n"), 0o644)
		case 8:
			os.WriteFile(paused, nil, 0o644)
		}
		if h%4 != 1 { // every fourth run is killed before its fold: the next one folds it
			if _, err := history.Fold(dir, slog.New(slog.DiscardHandler)); err != nil {
				t.Fatal(err)
			}
			if err := runner.CompactHistory(dir, at.Add(time.Minute), slog.New(slog.DiscardHandler)); err != nil {
				t.Fatal(err)
			}
		}
		if h%7 == 6 {
			// A byte of the newest part flipped, found by the next scrub.
			parts, _ := filepath.Glob(filepath.Join(data.Dir(dir).Results(), "date=*", "part-*.parquet"))
			if len(parts) > 0 {
				p := parts[len(parts)-1]
				body, _ := os.ReadFile(p)
				body[4+h%(pagesEnd(t, body)-4)] ^= 0x10
				os.WriteFile(p, body, 0o644)
				if st, err := history.Scrub(dir, slog.New(slog.DiscardHandler)); err != nil || len(st.Repaired) != 1 {
					t.Fatalf("scrub after a flip in %s: %+v %v", p, st, err)
				}
			}
		}
		now = at.Add(90 * time.Second)
		if _, err := site.Publish(context.Background(), cfg); err != nil {
			t.Fatalf("publish of hour %d: %v", h, err)
		}
	}
	incremental := testutil.MustTree(t, cfg.OutDir)
	for _, p := range []string{cfg.OutDir, filepath.Join(dir, "site", "state.bin"), filepath.Join(dir, "site", "older"), filepath.Join(dir, "site", "feed.json")} {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	st, err := site.Publish(context.Background(), cfg)
	if err != nil || !st.Rebuilt {
		t.Fatalf("rebuild: %+v %v", st, err)
	}
	rebuilt := testutil.MustTree(t, cfg.OutDir)
	for name, want := range incremental {
		if got, ok := rebuilt[name]; !ok || !bytes.Equal(got, want) {
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			t.Errorf("%s differs after a rebuild at byte %d:\nincremental …%s\n    rebuilt …%s", name, i, want[max(i-120, 0):min(i+80, len(want))], got[max(i-120, 0):min(i+80, len(got))])
		}
	}
	for name := range rebuilt {
		if _, ok := incremental[name]; !ok {
			t.Errorf("%s: published by the rebuild only", name)
		}
	}
}
