package site

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/internal/testutil"
)

// rebuildTree rebuilds f's site from its data directory alone with
// workers and a batch of servers (Config.rebuildBatch), and returns the
// published files and the site's record.
func rebuildTree(t *testing.T, f *fixture, workers, batch int) (out, record map[string][]byte) {
	t.Helper()
	for _, path := range []string{f.out, data.Dir(f.dir).SiteStore()} {
		if err := os.RemoveAll(path); err != nil {
			t.Fatal(err)
		}
	}
	cfg := f.config()
	cfg.Workers, cfg.rebuildBatch = workers, batch
	st, err := Publish(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Rebuilt {
		t.Fatal("not a rebuild")
	}
	return testutil.MustTree(t, f.out), testutil.MustTree(t, filepath.Join(f.dir, "site"))
}

// TestRebuildBatchesAndWorkers: a rebuild renders its servers in batches
// of ids, each with its results read back from the spill, over workers in
// parallel; one server a batch over eight workers, two over three, and all
// in one batch by one worker publish byte-identical files and records,
// and leave no spill behind, nor the one a killed rebuild left.
func TestRebuildBatchesAndWorkers(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	search := spool.ToolDef{Name: "search", Description: "search the docs"}
	fetch := spool.ToolDef{Name: "fetch", Description: "fetch a page"}
	for h := range 6 {
		at := fixNow.Add(-time.Duration(6-h)*time.Hour + 3*time.Second)
		defs := []spool.ToolDef{search, fetch}
		if h >= 3 {
			defs = defs[:1] // the definitions change in the middle
		}
		f.results(withTools(result(srvWorking, at, data.Working, ""), defs...),
			result(srvRefused, at.Add(time.Second), data.Refused, "HTTP 429"))
		if h%2 == 0 {
			f.fold()
		}
	}
	wantOut, wantRecord := rebuildTree(t, f, 1, 1<<30)
	if len(wantOut) < 5*len(fixServers) {
		t.Fatalf("%d files published, want every server's", len(wantOut))
	}
	for _, tc := range []struct{ workers, batch int }{{8, 1}, {3, 2}, {2, 0}} {
		t.Run(fmt.Sprintf("workers=%d,batch=%d", tc.workers, tc.batch), func(t *testing.T) {
			killed := filepath.Join(f.dir, "site", spillPrefix+"killed")
			if err := os.MkdirAll(killed, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(killed, "batch-0000.jsonl"), []byte("{}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			out, record := rebuildTree(t, f, tc.workers, tc.batch)
			sameTree(t, "published", wantOut, out)
			sameTree(t, "record", wantRecord, record)
		})
	}
}

// sameTree reports the files of got that differ from want.
func sameTree(t *testing.T, what string, want, got map[string][]byte) {
	t.Helper()
	for name, w := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("%s %s: missing", what, name)
		} else if !bytes.Equal(g, w) {
			t.Errorf("%s %s differs:\n got %.200s\nwant %.200s", what, name, g, w)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s %s: not in the reference", what, name)
		}
	}
}

// TestRebuildHeapBounded: a rebuild holds the results of one batch of
// servers at a time (and reads the next), not the whole history: four
// times the servers, each with two days of hourly checks (a Parquet part
// an hour, as the folds write them), grow its peak heap by a fraction of
// what they grow that of a rebuild in one batch, which holds every
// result. (Every server's row, state and listing stay in memory: a few
// hundred bytes each.)
func TestRebuildHeapBounded(t *testing.T) {
	// Not parallel: it measures the heap of the process.
	if testing.Short() {
		t.Skip("-short: writes 48,000 results")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	const days = 2
	histories := map[int]*fixture{}
	for _, n := range []int{100, 500} {
		f := newFixture(t)
		servers := make([]data.Server, n)
		for i := range servers {
			servers[i] = data.Server{ID: fmt.Sprintf("s%05d", i), Rank: i + 1, URL: fmt.Sprintf("https://h%d.example.com/mcp", i), Added: fixNow.AddDate(0, 0, -90)}
		}
		f.writeServers(servers)
		for h := days * 24; h >= 1; h-- {
			rs := make([]data.Result, n)
			for i, s := range servers {
				rs[i] = result(s, fixNow.Add(-time.Duration(h)*time.Hour+time.Duration(i)*time.Second), data.Working, "")
			}
			appendConcurrently(t, f, rs)
		}
		f.fold()
		histories[n] = f
	}
	peak := func(n, batch int) uint64 {
		f := histories[n]
		for _, path := range []string{f.out, filepath.Join(f.dir, "site")} {
			if err := os.RemoveAll(path); err != nil {
				t.Fatal(err)
			}
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		stop := make(chan struct{})
		p := testutil.SamplePeak("/memory/classes/heap/objects:bytes", stop)
		cfg := f.config()
		cfg.rebuildBatch, cfg.NoHTML = batch, true
		if _, err := Publish(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		close(stop)
		return p.Load() - min(ms.HeapAlloc, p.Load())
	}
	grow := func(batch int) uint64 {
		small, large := peak(100, batch), peak(500, batch)
		t.Logf("batch of %d servers: peak heap over the set-up %d KB at 100 servers, %d KB at 500", batch, small>>10, large>>10)
		return large - min(small, large)
	}
	whole, batched := grow(1<<30), grow(50)
	if batched > whole/4 {
		t.Errorf("400 servers more grow the peak heap by %d KB in batches of 50, by %d KB in one batch: want under a quarter", batched>>10, whole>>10)
	}
}

// TestKilledRebuildSpillRemoved: the spill a rebuild killed after it
// saved its record left is removed by the next publish, which is no
// rebuild, as it finds the killed publish's mark.
func TestKilledRebuildSpillRemoved(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	if st := f.MustPublish(); !st.Rebuilt {
		t.Fatal("the first publish is no rebuild")
	}
	killed := filepath.Join(f.dir, "site", spillPrefix+"killed")
	if err := os.MkdirAll(killed, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(unfinishedPath(f.dir), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f.now = fixNow.Add(time.Minute)
	if st := f.MustPublish(); st.Rebuilt {
		t.Fatal("the next publish rebuilt")
	}
	if _, err := os.Stat(killed); !os.IsNotExist(err) {
		t.Errorf("the killed rebuild's spill is still there: %v", err)
	}
}

// TestRebuildWritesAfresh: a rebuild writes the directories of the
// servers' files that the output lacks afresh, moved into place at the
// flush, and those it has file by file: into an empty output, into one
// that lacks only feeds/ (and index.json, hence the rebuild), after a
// rebuild whose flush failed (nothing of the servers' files in place, no
// directory left), and after a rebuild killed part-way (its directories
// left, removed), the same files are published.
func TestRebuildWritesAfresh(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	want, _ := rebuildTree(t, f, 2, 0)
	leftovers := func(t *testing.T) {
		t.Helper()
		if m, _ := filepath.Glob(filepath.Join(f.out, freshPrefix+"*")); len(m) > 0 {
			t.Errorf("left in the output: %v", m)
		}
	}
	for _, tc := range []struct {
		name   string
		before func(t *testing.T)
	}{
		{"only_feeds_lacking", func(t *testing.T) {
			for _, path := range []string{filepath.Join(f.out, "index.json"), filepath.Join(f.out, "feeds")} {
				if err := os.RemoveAll(path); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"after_a_failed_flush", func(t *testing.T) {
			if err := os.RemoveAll(f.out); err != nil {
				t.Fatal(err)
			}
			c := flushCounter{fail: errors.New("disk gone")}
			cfg := f.config()
			c.install(&cfg)
			if _, err := Publish(context.Background(), cfg); !errors.Is(err, c.fail) {
				t.Fatalf("publish with a failing flush: %v, want %v", err, c.fail)
			}
			for _, sub := range serverDirs {
				if _, err := os.Stat(filepath.Join(f.out, sub)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s in place although the flush failed: %v", sub, err)
				}
			}
			leftovers(t)
		}},
		{"after_a_kill", func(t *testing.T) {
			if err := os.RemoveAll(f.out); err != nil {
				t.Fatal(err)
			}
			killed := filepath.Join(f.out, freshPrefix+"servers-killed")
			if err := os.MkdirAll(killed, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(killed, srvWorking.ID+".json"), []byte("{"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.before(t)
			if err := os.RemoveAll(data.Dir(f.dir).SiteStore()); err != nil {
				t.Fatal(err)
			}
			if st := f.MustPublish(); !st.Rebuilt {
				t.Fatal("not a rebuild")
			}
			sameTree(t, "published", want, testutil.MustTree(t, f.out))
			leftovers(t)
		})
	}
}

// TestMinuteRendersOneAtATime: a minute's publish renders its servers one
// at a time, a rebuild Config.Workers at a time. Each server file's first
// write waits for a second one to start: within 300 ms in a minute, where
// none may, and within 10 s in a rebuild, where one must.
func TestMinuteRendersOneAtATime(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	f.MustPublish() // the site the minute publishes into
	cfg := f.config()
	// Two workers, so that a rebuild has exactly that many writes at
	// once at most: with more, others may start while the first is still
	// waking, and the count says nothing of the rule.
	cfg.Workers = 2
	var (
		mu             sync.Mutex
		inFlight, most int
		waited         bool
		met            chan struct{} // closed when a second write starts
		wait           time.Duration
	)
	cfg.calls.Write = func(fl *os.File, b []byte) (int, error) {
		if dir := filepath.Base(filepath.Dir(fl.Name())); dir != "servers" && !strings.HasPrefix(dir, freshPrefix+"servers") {
			return fl.Write(b)
		}
		mu.Lock()
		inFlight++
		if inFlight == 2 && most < 2 {
			close(met)
		}
		most = max(most, inFlight)
		first := !waited
		waited = true
		mu.Unlock()
		defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
		if first {
			select {
			case <-met:
			case <-time.After(wait):
			}
		}
		return fl.Write(b)
	}
	for _, tc := range []struct {
		name    string
		before  func()
		wait    time.Duration
		workers int
	}{
		{"minute", func() {
			f.now = f.now.Add(time.Minute)
			f.results(result(srvWorking, f.now.Add(-30*time.Second), data.Failing, "HTTP 502"),
				result(srvRefused, f.now.Add(-20*time.Second), data.Working, ""))
		}, 300 * time.Millisecond, 1},
		{"rebuild", func() {
			for _, path := range []string{f.out, filepath.Join(f.dir, "site")} {
				if err := os.RemoveAll(path); err != nil {
					t.Fatal(err)
				}
			}
		}, 10 * time.Second, cfg.Workers},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.before()
			most, waited = 0, false
			met, wait = make(chan struct{}), tc.wait
			st, err := Publish(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if st.Rendered < 2 {
				t.Fatalf("%d servers rendered, want two or more", st.Rendered)
			}
			if most != tc.workers {
				t.Errorf("%d servers' files written at once, want %d", most, tc.workers)
			}
		})
	}
}
