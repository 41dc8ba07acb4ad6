package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
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

// history is a data directory whose Parquet history has files of every
// age: a day compacted (two runs of yesterday merged), and today's parts
// (three runs), with the site published from it.
type historyFixture struct {
	root    string
	servers []data.Server
	checks  int                 // checks recorded
	minutes map[string][]string // by file base name: the minutes (HH:MM) of its runs
	out     map[string][]byte   // the site published before any damage
}

// historyNow is when the site is published: today's parts are of the
// minutes before it.
var historyNow = minute0.Add(10 * time.Minute)

func (h *historyFixture) dir() string { return filepath.Join(h.root, "data") }

func (h *historyFixture) config(root string) site.Config {
	return site.Config{Contact: "probe@example.org", DataDir: filepath.Join(root, "data"), ServersPath: filepath.Join(root, "servers.csv"),
		OutDir: filepath.Join(root, "out"), Now: func() time.Time { return historyNow }, Logger: slog.New(slog.DiscardHandler), Workers: 2, NoHTML: true}
}

func mustHistory(tb testing.TB) *historyFixture {
	tb.Helper()
	h := &historyFixture{root: tb.TempDir(), servers: baseServers(), minutes: map[string][]string{}}
	if err := os.MkdirAll(h.dir(), 0o755); err != nil {
		tb.Fatal(err)
	}
	writeList(tb, filepath.Join(h.root, "servers.csv"), h.servers)
	runs := []time.Time{
		minute0.Add(-24 * time.Hour), minute0.Add(-24*time.Hour + time.Minute), // yesterday: compacted
		minute0, minute0.Add(time.Minute), minute0.Add(2 * time.Minute), // today: parts
	}
	for _, at := range runs {
		name := data.RunJournal(at, 4242)
		j, err := spool.CreateJournal(h.dir(), name)
		if err != nil {
			tb.Fatal(err)
		}
		for i, s := range h.servers {
			t := at.Add(time.Duration(i)*time.Second + 123*time.Microsecond)
			r := data.Result{ID: s.ID, URL: s.URL, Host: s.Host(), Reason: data.ReasonRoutine, Status: data.Outcomes[i%5], Detail: "d " + s.ID,
				Started: t, Finished: t.Add(time.Second), Duration: time.Second}
			if err := j.Append(r); err != nil {
				tb.Fatal(err)
			}
			h.checks++
		}
		j.Close()
		if _, err := history.Fold(h.dir(), minute0, slog.New(slog.DiscardHandler)); err != nil {
			tb.Fatal(err)
		}
		h.minutes["part-"+name+".parquet"] = []string{at.Format("15:04")}
	}
	// The run's own step after its fold: yesterday becomes one file.
	if err := runner.CompactHistory(h.dir(), historyNow, slog.New(slog.DiscardHandler)); err != nil {
		tb.Fatal(err)
	}
	h.minutes["merged-000001.parquet"] = []string{runs[0].Format("15:04"), runs[1].Format("15:04")}
	if _, err := site.Publish(context.Background(), h.config(h.root)); err != nil {
		tb.Fatal(err)
	}
	h.out = testutil.MustTree(tb, filepath.Join(h.root, "out"))
	return h
}

// pagesEnd returns where the row groups of a history file end: the byte
// count its SumKey covers, read from the footer's text.
var sumValue = regexp.MustCompile(`plug\.directory/crc32c.{1,3}?(\d+) [0-9a-f]{8}`)

func pagesEnd(tb testing.TB, b []byte) int {
	tb.Helper()
	m := sumValue.FindSubmatch(b)
	if m == nil {
		tb.Fatal("no checksum in the footer")
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// historyChecks returns the checks the history holds of the days of the
// runs, and what could not be read.
func historyChecks(tb testing.TB, dir string) (int, []error) {
	tb.Helper()
	rs, bad, err := history.ReadHistory(dir, minute0.Add(-48*time.Hour), minute0.Add(24*time.Hour))
	if err != nil {
		tb.Fatal(err)
	}
	return len(rs), bad
}

// TestDamagedHistory: a byte flipped in the pages of
// a Parquet file of every age (a part of today, the compacted file of a
// day) loses no check: after the next scrub, or the next rebuild of the
// site, every check is in the history and the site is the one published
// before the damage. With both copies of the file damaged, its checks are
// named lost, with their minutes, in status.json and the record the
// metrics read; the others stay, and every file left under results/
// (what DuckDB reads) reads whole.
func TestDamagedHistory(t *testing.T) {
	t.Parallel() // its own directories; mostly waits for fsyncs, which overlap
	h := mustHistory(t)
	flips := 6
	if testing.Short() {
		flips = 1 // one of each case; the full run flips 6
	}
	rng := rand.New(rand.NewPCG(18, 1))
	for _, tc := range []struct {
		file  string // base name under results/date=…/
		after string // "scrub" or "rebuild"
		both  bool   // its second copy damaged too
	}{
		{"part-" + data.RunJournal(minute0.Add(time.Minute), 4242) + ".parquet", "scrub", false},
		{"part-" + data.RunJournal(minute0.Add(time.Minute), 4242) + ".parquet", "rebuild", false},
		{"merged-000001.parquet", "scrub", false},
		{"merged-000001.parquet", "rebuild", false},
		{"part-" + data.RunJournal(minute0.Add(time.Minute), 4242) + ".parquet", "scrub", true},
		{"merged-000001.parquet", "rebuild", true},
	} {
		name := strings.TrimSuffix(tc.file, ".parquet") + "_" + tc.after
		if tc.both {
			name += "_both_copies"
		}
		t.Run(name, func(t *testing.T) {
			for i := range flips {
				root := filepath.Join(t.TempDir(), "c")
				testutil.CopyTree(t, h.root, root)
				dir := filepath.Join(root, "data")
				matches, _ := filepath.Glob(filepath.Join(data.Dir(dir).Results(), "date=*", tc.file))
				if len(matches) != 1 {
					t.Fatalf("%s: %v", tc.file, matches)
				}
				path := matches[0]
				targets := []string{path}
				if tc.both {
					rel, _ := filepath.Rel(data.Dir(dir).Results(), path)
					targets = append(targets, filepath.Join(data.Dir(dir).Replica(), rel))
				}
				var what string
				for _, p := range targets {
					body, err := os.ReadFile(p)
					if err != nil {
						t.Fatal(err)
					}
					at := 4 + rng.IntN(pagesEnd(t, body)-4) // in a data page
					body[at] ^= byte(1 + rng.IntN(255))
					os.WriteFile(p, body, 0o644)
					what += fmt.Sprintf("flip %d at byte %d of %s; ", i, at, p)
				}
				switch tc.after {
				case "scrub":
					if _, err := history.Scrub(dir, minute0, slog.New(slog.DiscardHandler)); err != nil {
						t.Fatalf("%sscrub: %v", what, err)
					}
				case "rebuild":
					os.RemoveAll(filepath.Join(root, "out"))
				}
				if _, err := site.Publish(context.Background(), h.config(root)); err != nil {
					t.Fatalf("%spublish: %v", what, err)
				}
				got, bad := historyChecks(t, dir)
				out := testutil.MustTree(t, filepath.Join(root, "out"))
				var status record.Status
				if err := json.Unmarshal(out["status.json"], &status); err != nil {
					t.Fatal(err)
				}
				if !tc.both {
					if got != h.checks || len(bad) > 0 || len(status.HistoryLost) != 0 {
						t.Fatalf("%s%d checks of %d in the history, bad %v, lost %+v", what, got, h.checks, bad, status.HistoryLost)
					}
					delete(out, "status.json")
					want := maps.Clone(h.out)
					delete(want, "status.json")
					if !reflect.DeepEqual(out, want) {
						t.Fatalf("%sthe site differs from the one published before the damage", what)
					}
				} else {
					lost := len(h.servers) * len(h.minutes[tc.file])
					if got != h.checks-lost || len(bad) > 0 {
						t.Fatalf("%s%d checks in the history, bad %v; want %d (the %d of the lost file gone)", what, got, bad, h.checks-lost, lost)
					}
					if len(status.HistoryLost) != 1 || !reflect.DeepEqual(status.HistoryLost[0].Minutes, h.minutes[tc.file]) ||
						!strings.Contains(status.HistoryLost[0].Text, "lost to a damaged file") {
						t.Fatalf("%sstatus.json history_lost %+v, want the minutes %v", what, status.HistoryLost, h.minutes[tc.file])
					}
					damage, _, err := history.ReadHistoryDamage(dir)
					if err != nil || len(damage) != 1 || damage[0].Restored {
						t.Fatalf("%srecorded damage %+v %v", what, damage, err)
					}
				}
				// What DuckDB reads: every file under results/ reads whole.
				files, _ := data.Dir(dir).ResultParts()
				for _, f := range files {
					if _, err := history.ReadParquet(f); err != nil {
						t.Fatalf("%sa damaged file left under results/: %v", what, err)
					}
				}
				os.RemoveAll(root)
			}
		})
	}
}
