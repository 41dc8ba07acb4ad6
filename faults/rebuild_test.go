package faults

import (
	"context"
	"encoding/json"
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
	"plug.directory/prober/site/record"
)

// TestRebuildEqualsIncremental: a day of hourly runs and
// publishes with faults (runs killed before their fold, whose journals the
// next run folds and publish reads meanwhile at nanoseconds; parts with a
// flipped byte restored by the scrub; the day compacted; a server paused
// and resumed) ends with a site that a full rebuild from the data
// directory alone, at the same time, gives byte for byte, across a
// midnight after which two servers with certificates are not checked
// (nothing a file derives from the date may go stale). -short runs 9
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
	// Each server's certificate expires at 01:00 some days after
	// minute0: s01504's within the warning, s02511's beyond it. Those two
	// were checked two days before the first hour and never after, so
	// their files are rendered by the first publish and by none after
	// midnight but for the day's change of a certificate within the
	// warning: nothing else in them may derive from the date.
	certEnd := func(i int) time.Time { return minute0.Truncate(24*time.Hour).AddDate(0, 0, 3*i).Add(time.Hour) }
	tlsOf := func(i int) *data.TLSInfo {
		return &data.TLSInfo{Version: "TLS 1.3", NotAfter: certEnd(i), Issuer: "CN=test", Names: []string{servers[i].Host()}}
	}
	before, err := spool.CreateJournal(dir, data.RunJournal(start.Add(-48*time.Hour), 4242))
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{4, 11} {
		s, at := servers[i], start.Add(-48*time.Hour+time.Duration(i)*time.Second)
		if err := before.Append(data.Result{ID: s.ID, URL: s.URL, Host: s.Host(), Reason: data.ReasonRoutine, Status: data.Working,
			Started: at, Finished: at.Add(time.Second), Duration: time.Second, TLS: tlsOf(i)}); err != nil {
			t.Fatal(err)
		}
	}
	before.Close()
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
			if i%7 == 4 {
				continue // checked two days before only
			}
			started := at.Add(time.Duration(i)*time.Second + time.Duration(h*1000+i)*time.Microsecond + 789) // nanoseconds, as a run records them
			o := data.Outcomes[(i+h/5)%5]
			r := data.Result{ID: s.ID, URL: s.URL, Host: s.Host(), Reason: data.ReasonRoutine, Status: o, Detail: "d " + s.ID,
				Started: started, Finished: started.Add(time.Second), Duration: time.Second,
				TLS: tlsOf(i)}
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
			if _, err := history.Fold(dir, minute0, slog.New(slog.DiscardHandler)); err != nil {
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
				if st, err := history.Scrub(dir, minute0, slog.New(slog.DiscardHandler)); err != nil || len(st.Repaired) != 1 {
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
	testutil.DiffTrees(t, "the rebuild against the incremental site", incremental, testutil.MustTree(t, cfg.OutDir))
	for id, want := range map[string]string{servers[4].ID: "expires in 12 days", servers[11].ID: "valid until 2030-07-04"} {
		var f record.ServerFile
		if err := json.Unmarshal(incremental["servers/"+id+".json"], &f); err != nil || f.Certificate == nil || f.Certificate.Message != want {
			t.Errorf("%s: certificate %+v (%v), want %q after midnight", id, f.Certificate, err, want)
		}
	}
}
