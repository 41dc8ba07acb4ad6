package history

import (
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/datatest"
)

// flipByte flips one byte of path at offset at, from its start.
func flipByte(tb testing.TB, path string, at int) {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	b[at] ^= 0x40
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// TestScrub: a scrub round reads every history file and its second copy; a
// flipped byte in the pages of a part, of a compacted day or of a second
// copy is found and repaired with no row lost; a file damaged in both
// copies is set aside and recorded lost with the minutes of its runs, and
// the history stays readable without it.
func TestScrub(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		damage    func(dir string) // the files it damages
		wantRows  int
		wantLost  string // in the recorded damage's Lost; "" for none lost
		wantCopy  bool   // a second copy written again
		compacted bool   // the day compacted first
	}{
		{name: "part", wantRows: 12, damage: func(dir string) {
			flipByte(t, filepath.Join(data.Dir(dir).ResultDay(datatest.T0), "part-run-20261202T1001-0.parquet"), 40)
		}},
		{name: "compacted_day", compacted: true, wantRows: 12, damage: func(dir string) {
			flipByte(t, filepath.Join(data.Dir(dir).ResultDay(datatest.T0), "merged-000001.parquet"), 40)
		}},
		{name: "second_copy", wantRows: 12, wantCopy: true, damage: func(dir string) {
			flipByte(t, replicaOf(dir, filepath.Join(data.Dir(dir).ResultDay(datatest.T0), "part-run-20261202T1002-0.parquet")), 40)
		}},
		{name: "part_missing", wantRows: 12, damage: func(dir string) {
			os.Remove(filepath.Join(data.Dir(dir).ResultDay(datatest.T0), "part-run-20261202T1003-0.parquet"))
		}},
		{name: "both_copies", wantRows: 9, wantLost: "checks of 2026-12-02 10:01 lost to a damaged file (results/date=2026-12-02/part-run-20261202T1001-0.parquet)", damage: func(dir string) {
			part := filepath.Join(data.Dir(dir).ResultDay(datatest.T0), "part-run-20261202T1001-0.parquet")
			flipByte(t, part, 40)
			flipByte(t, replicaOf(dir, part), 40)
		}},
		{name: "both_copies_compacted", compacted: true, wantRows: 0, wantLost: "checks of 2026-12-02 10:00, 10:01, 10:02, 10:03 lost", damage: func(dir string) {
			merged := filepath.Join(data.Dir(dir).ResultDay(datatest.T0), "merged-000001.parquet")
			flipByte(t, merged, 40)
			flipByte(t, replicaOf(dir, merged), 40)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for m := range 4 {
				at := datatest.T0.Add(time.Duration(m) * time.Minute)
				MustFoldRuns(t, dir, strings.TrimSuffix(data.RunJournal(at, 0), "-0") /* MustFoldRuns appends -0 */, at, 1, 3)
			}
			if tt.compacted {
				if _, err := Compact(dir, datatest.T0.AddDate(0, 0, 1), slog.New(slog.DiscardHandler)); err != nil {
					t.Fatal(err)
				}
			}
			// Whole before the damage: a round finds nothing to do.
			st, err := Scrub(dir, datatest.T0, slog.New(slog.DiscardHandler))
			if err != nil || !st.Wrapped || len(st.Repaired) != 0 || st.Copied != 0 {
				t.Fatalf("scrub of a whole history: %+v %v", st, err)
			}
			tt.damage(dir)
			// Found 40 days on by the run's clock, not the wall's: what is
			// set aside, and the record of damage, say that day.
			found := datatest.T0.AddDate(0, 0, 40)
			st, err = Scrub(dir, found, slog.New(slog.DiscardHandler))
			if err != nil || !st.Wrapped {
				t.Fatalf("scrub: %+v %v", st, err)
			}
			asides := 0
			filepath.WalkDir(data.Dir(dir).Damaged(), func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && p != data.Dir(dir).HistoryDamage() {
					asides++
					if !strings.HasSuffix(p, "."+found.Format(asideLayout)) {
						t.Errorf("set aside as %s, want it named for %v, when the scrub found it", p, found)
					}
				}
				return nil
			})
			if want := tt.name != "part_missing"; (asides > 0) != want {
				t.Errorf("%d files set aside, want some %v", asides, want)
			}
			if (st.Copied > 0) != tt.wantCopy {
				t.Errorf("copies written %d, want some %v", st.Copied, tt.wantCopy)
			}
			damages, _, err := ReadHistoryDamage(dir)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.wantCopy && len(damages) != 0:
				t.Errorf("damage recorded %+v, want none: the history file was whole", damages)
			case !tt.wantCopy && (len(damages) != 1 || len(st.Repaired) != 1):
				t.Errorf("damage recorded %+v, repaired %v; want 1", damages, st.Repaired)
			case !tt.wantCopy && !damages[0].At.Equal(found):
				t.Errorf("damage %+v recorded at %v, want %v, when the scrub found it", damages[0], damages[0].At, found)
			case tt.wantLost == "" && !tt.wantCopy && !damages[0].Restored:
				t.Errorf("damage %+v: want it restored", damages[0])
			case tt.wantLost != "" && (damages[0].Restored || !strings.Contains(damages[0].Lost(), tt.wantLost) || !strings.Contains(st.Repaired[0].Error(), tt.wantLost)):
				t.Errorf("damage %+v, reported %v; want it lost: %q", damages[0], st.Repaired, tt.wantLost)
			}
			if n := mustCount(t, dir); n != tt.wantRows {
				t.Errorf("history has %d rows, want %d", n, tt.wantRows)
			}
			// Repaired: the next round reads every file whole.
			st, err = Scrub(dir, datatest.T0, slog.New(slog.DiscardHandler))
			if err != nil || len(st.Repaired) != 0 || st.Copied != 0 {
				t.Errorf("second scrub: %+v %v; want nothing to repair", st, err)
			}
			if _, bad, err := ReadHistory(dir, datatest.T0, datatest.T0); err != nil || len(bad) != 0 {
				t.Errorf("history after the scrub: %v %v", bad, err)
			}
		})
	}
}

// TestScrubBounded: a scrub reads one file and its copy, then more up to
// a budget, and goes on where the last stopped, so that successive
// calls cover every file and start again.
func TestScrubBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	MustFoldRuns(t, dir, "run", datatest.T0, 6, 3)
	rels, _, err := scrubList(dir)
	if err != nil || len(rels) != 6 {
		t.Fatalf("scrub list %v %v", rels, err)
	}
	// A minimum of one byte: one file and its copy a call.
	for call := range 7 {
		st, err := scrub(dir, 1, datatest.T0, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		cursor, _ := os.ReadFile(scrubCursorPath(dir))
		want := rels[call%6]
		if call%6 == 5 {
			want = "" // the round ends: the next starts from the first
		}
		if st.Files != 2 || string(cursor) != want || st.Wrapped != (call%6 == 5) {
			t.Errorf("call %d: %+v, cursor %q; want 2 files, cursor %q", call, st, cursor, want)
		}
	}
	// The production minimum is larger than this history: one call reads it all.
	if st, err := Scrub(dir, datatest.T0, slog.New(slog.DiscardHandler)); err != nil || st.Files != 12 || !st.Wrapped {
		t.Errorf("Scrub: %+v %v; want all 12 files (6 and their copies)", st, err)
	}
}

// TestScrubCostFlat: as the history ages a day at a time, each Scrub reads
// at most ScrubBytes beyond one file and its copy, counted at the reader,
// whatever the history's size (it read the whole history while that was
// under 64 MB: the run's cost grew with the data's age), and the calls
// still cover every file and start again.
func TestScrubCostFlat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const days = 8
	var pair int64 // the largest file and its copy
	for d := range days {
		size := MustCompactedDay(t, dir, datatest.T0.AddDate(0, 0, d), 4000, rand.New(rand.NewPCG(3, uint64(d))))
		pair = max(pair, 2*size)
		// Each day of age: calls until a round ends, then one whole round.
		rels, _, _ := scrubList(dir)
		var total int64
		for round := range 2 {
			calls := 0
			for wrapped := false; !wrapped; calls++ {
				if calls > len(rels) {
					t.Fatalf("day %d: no round ends in %d calls, one a file", d, calls)
				}
				st, err := Scrub(dir, datatest.T0, slog.New(slog.DiscardHandler))
				if err != nil {
					t.Fatal(err)
				}
				total, wrapped = st.Total, st.Wrapped
				if st.Read > ScrubBytes+pair || st.Read < st.Bytes/2 || st.Files > 2*ScrubFiles {
					t.Errorf("day %d, round %d: read %d B of %d in %d files; want at most %d (ScrubBytes and one file and its copy) in %d files",
						d, round, st.Read, st.Total, st.Files, ScrubBytes+pair, 2*ScrubFiles)
				}
			}
		}
		if d == days-1 && total <= 2*ScrubBytes+pair {
			t.Fatalf("the history holds %d B: too small to show the bound", total)
		}
	}
}

// TestScrubFilesBounded: a history of many small files (a small
// deployment's days and today's parts) is read ScrubFiles files and their
// copies a call (going on from the first when it reaches the last), not
// all of them while they hold under ScrubBytes, and a round ends in as
// many calls as that takes.
func TestScrubFilesBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const parts = 3*ScrubFiles + 2
	MustFoldRuns(t, dir, "run", datatest.T0, parts, 1)
	for call := range parts/ScrubFiles + 1 {
		st, err := Scrub(dir, datatest.T0, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		last := call == parts/ScrubFiles
		if st.Files != 2*ScrubFiles || st.Wrapped != last {
			t.Errorf("call %d: %d files, round ended %v; want %d files and the round ended %v", call, st.Files, st.Wrapped, 2*ScrubFiles, last)
		}
	}
}
