package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"plug.directory/prober/data"
	"plug.directory/prober/data/datatest"
	"plug.directory/prober/data/spool/spooltest"
	"plug.directory/prober/internal/durable"
)

// MustFoldRuns journals and folds n runs of k results each on the day of
// at, naming them prefix-i.
func MustFoldRuns(tb testing.TB, dir, prefix string, at time.Time, n, k int) {
	tb.Helper()
	for i := range n {
		var rs []data.Result
		for c := range k {
			rs = append(rs, datatest.NewResult(fmt.Sprintf("%s-%d-%d", prefix, i, c), at.Add(time.Duration(i*k+c)*time.Second), data.Working))
		}
		spooltest.MustJournal(tb, dir, fmt.Sprintf("%s-%d", prefix, i), rs...).Close()
	}
	if _, err := Fold(dir, datatest.T0, slog.New(slog.DiscardHandler)); err != nil {
		tb.Fatal(err)
	}
}

// mustCount returns the rows ReadHistory sees on the day of T0 and checks
// there are no repeats of one check.
func mustCount(tb testing.TB, dir string) int {
	tb.Helper()
	rs, bad, err := ReadHistory(dir, datatest.T0, datatest.T0)
	if err != nil || len(bad) > 0 {
		tb.Fatalf("ReadHistory: %v %v", err, bad)
	}
	seen := map[string]bool{}
	for _, r := range rs {
		key := r.ID + r.Started.String()
		if seen[key] {
			tb.Errorf("check %s at %v read twice", r.ID, r.Started)
		}
		seen[key] = true
	}
	return len(rs)
}

func files(tb testing.TB, dir string) []string {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join(data.Dir(dir).ResultDay(datatest.T0), "*.parquet"))
	if err != nil {
		tb.Fatal(err)
	}
	for i, p := range paths {
		paths[i] = filepath.Base(p)
	}
	return paths
}

func TestCompactExactlyOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	next := datatest.T0.Add(24 * time.Hour)
	MustFoldRuns(t, dir, "run-a", datatest.T0, 5, 7)
	if got := files(t, dir); len(got) != 5 {
		t.Fatalf("after fold: %v, want 5 parts", got)
	}
	// Today is not compacted: runs still add parts to it.
	if st, err := Compact(dir, datatest.T0, slog.New(slog.DiscardHandler)); err != nil || st.Days != 0 {
		t.Fatalf("compact today: %+v %v, want nothing done", st, err)
	}
	before, _, err := ReadHistory(dir, datatest.T0, datatest.T0)
	if err != nil {
		t.Fatal(err)
	}
	st, err := Compact(dir, next, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if after, _, _ := ReadHistory(dir, datatest.T0, datatest.T0); !reflect.DeepEqual(after, before) {
		t.Errorf("rows changed by compaction:\n%+v\nwant\n%+v", after[0], before[0])
	}
	if st.Days != 1 || st.Files != 5 || st.Rows != 35 || st.Removed != 5 {
		t.Errorf("stats %+v, want 1 day, 5 files, 35 rows, 5 removed", st)
	}
	if got := files(t, dir); len(got) != 1 || got[0] != "merged-000001.parquet" {
		t.Errorf("after compact: %v, want merged-000001.parquet alone", got)
	}
	if n := mustCount(t, dir); n != 35 {
		t.Errorf("history has %d rows, want 35", n)
	}

	// A late run adds a part; compacting again merges the merged file.
	MustFoldRuns(t, dir, "run-b", datatest.T0.Add(time.Hour), 1, 3)
	if _, err := Compact(dir, next, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if got := files(t, dir); len(got) != 1 || got[0] != "merged-000002.parquet" {
		t.Errorf("after second compact: %v, want merged-000002.parquet alone", got)
	}
	list, err := mergedList(filepath.Join(data.Dir(dir).ResultDay(datatest.T0), "merged-000002.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "merged-000001.parquet part-run-a-0.parquet part-run-a-1.parquet part-run-a-2.parquet part-run-a-3.parquet part-run-a-4.parquet part-run-b-0.parquet"; strings.Join(list, " ") != want {
		t.Errorf("merged list %v, want %s", list, want)
	}
	if n := mustCount(t, dir); n != 38 {
		t.Errorf("history has %d rows, want 38", n)
	}
}

func TestCompactCrashes(t *testing.T) {
	t.Parallel()
	next := datatest.T0.Add(24 * time.Hour)
	t.Run("crash_before_parts_removed", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		MustFoldRuns(t, dir, "run", datatest.T0, 3, 4)
		part := filepath.Join(data.Dir(dir).ResultDay(datatest.T0), "part-run-1.parquet")
		saved, err := os.ReadFile(part)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Compact(dir, next, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatal(err)
		}
		// As if the compaction had died after the rename, before removing.
		if err := os.WriteFile(part, saved, 0o644); err != nil {
			t.Fatal(err)
		}
		if n := mustCount(t, dir); n != 12 {
			t.Errorf("history has %d rows with a superseded part left, want 12", n)
		}
		st, err := Compact(dir, next, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if st.Removed != 1 || st.Days != 0 {
			t.Errorf("stats %+v, want the leftover removed and nothing merged", st)
		}
		// A compaction that died before its rename leaves only a
		// temporary file, which the next one removes.
		tmp := filepath.Join(data.Dir(dir).ResultDay(datatest.T0), ".merged-000002.parquet.tmp-123")
		os.WriteFile(tmp, saved, 0o644)
		if _, err := Compact(dir, next, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(tmp); !os.IsNotExist(err) {
			t.Errorf("temporary file of a crashed compaction left: %v", err)
		}
		if got := files(t, dir); len(got) != 1 {
			t.Errorf("files %v, want the merged file alone", got)
		}
	})
	t.Run("fold_crashed_before_journal_removed", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		MustFoldRuns(t, dir, "run", datatest.T0, 2, 4)
		rs, err := ReadParquet(filepath.Join(data.Dir(dir).ResultDay(datatest.T0), "part-run-0.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Compact(dir, next, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatal(err)
		}
		// The journal of a fold that crashed before removing it comes back
		// after its part was merged and removed: folding it again must not
		// write its rows a second time.
		spooltest.MustJournal(t, dir, "run-0", rs...).Close()
		st, err := Fold(dir, datatest.T0, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if st.Journals != 1 {
			t.Errorf("fold stats %+v, want the journal folded (removed)", st)
		}
		if got := files(t, dir); len(got) != 1 {
			t.Errorf("files %v, want the merged file alone (no part rewritten)", got)
		}
		if n := mustCount(t, dir); n != 8 {
			t.Errorf("history has %d rows, want 8", n)
		}
	})
	for _, both := range []bool{false, true} {
		name := "corrupt_and_truncated_files_restored_from_their_second_copy"
		if both {
			name = "corrupt_and_truncated_files_and_copies_named_set_aside_once_rest_merged"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			MustFoldRuns(t, dir, "run", datatest.T0, 4, 3)
			pdir := data.Dir(dir).ResultDay(datatest.T0)
			// One part cut in half, one with garbage in its pages; with
			// both, their second copies too.
			damage := func(path string) {
				cut := filepath.Join(path, "part-run-1.parquet")
				b, _ := os.ReadFile(cut)
				os.WriteFile(cut, b[:len(b)/2], 0o644)
				garbled := filepath.Join(path, "part-run-2.parquet")
				g, _ := os.ReadFile(garbled)
				for i := 4; i < len(g)/2; i++ {
					g[i] = 0xff
				}
				os.WriteFile(garbled, g, 0o644)
			}
			damage(pdir)
			wantRows, wantBad := 12, 0
			if both {
				damage(replicaOf(dir, pdir))
				wantRows, wantBad = 6, 2
			}
			st, err := Compact(dir, next, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			if st.Files != wantRows/3 || st.Rows != int64(wantRows) || len(st.Bad) != wantBad || len(st.Recovered) != 2 {
				t.Errorf("stats %+v, want %d rows merged and %d files named", st, wantRows, wantBad)
			}
			if got := files(t, dir); len(got) != 1 {
				t.Errorf("files %v, want the merged file only", got)
			}
			aside, _ := filepath.Glob(filepath.Join(data.Dir(dir).Damaged(), "results", "date=*", "part-run-*.parquet.*"))
			if len(aside) != 2 || !strings.Contains(st.Recovered[0].Error(), "set aside as "+data.Dir(dir).Damaged()) {
				t.Errorf("set aside %v, errors %v; want both bad files kept under %s and named", aside, st.Recovered, data.Dir(dir).Damaged())
			}
			damages, bad, err := ReadHistoryDamage(dir)
			if err != nil || len(bad) > 0 || len(damages) != 2 || damages[0].Restored == both {
				t.Errorf("recorded damage %+v %v %v; want the 2 files, restored %v", damages, bad, err, !both)
			}
			if n := mustCount(t, dir); n != wantRows {
				t.Errorf("history has %d rows, want %d", n, wantRows)
			}
			// Set aside once: the next compaction neither merges nor reports them.
			if st, err := Compact(dir, next, slog.New(slog.DiscardHandler)); err != nil || len(st.Bad) != 0 || st.Files != 0 {
				t.Errorf("second compaction: %+v, %v; want nothing to do", st, err)
			}
		})
	}
}

// oldRow is a history row of an earlier version, without some columns.
type oldRow struct {
	ID        string `parquet:"id"`
	Status    string `parquet:"status"`
	StartedAt int64  `parquet:"started_at,timestamp(millisecond)"`
}

func TestCompactOlderSchema(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	MustFoldRuns(t, dir, "run", datatest.T0, 1, 2)
	var buf bytes.Buffer
	if err := parquet.Write(&buf, []oldRow{{ID: "old", Status: "working", StartedAt: datatest.T0.UnixMilli()}}); err != nil {
		t.Fatal(err)
	}
	if err := durable.WriteFileAtomic(filepath.Join(data.Dir(dir).ResultDay(datatest.T0), "part-old.parquet"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := Compact(dir, datatest.T0.Add(24*time.Hour), slog.New(slog.DiscardHandler))
	if err != nil || st.Files != 2 || st.Rows != 3 {
		t.Fatalf("compact: %+v %v, want both files merged, 3 rows", st, err)
	}
	rs, bad, err := ReadHistory(dir, datatest.T0, datatest.T0)
	if err != nil || len(bad) > 0 || len(rs) != 3 {
		t.Fatalf("history: %d rows, %v %v", len(rs), bad, err)
	}
	for _, r := range rs {
		if r.ID == "old" && (r.Status != data.Working || !r.Started.Equal(datatest.T0)) {
			t.Errorf("old row read back as %+v", r)
		}
	}
}

// TestFoldRemovesStaleNewJournal: a run that died between creating its
// journal and putting it in place leaves a file with no result, which the
// next fold removes; one being created (locked) stays.
func TestFoldRemovesStaleNewJournal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(data.Dir(dir).JournalDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(data.Dir(dir).JournalDir(), ".run-x.new")
	os.WriteFile(stale, nil, 0o644)
	j := spooltest.MustJournal(t, dir, "run-live")
	defer j.Close()
	if _, err := Fold(dir, datatest.T0, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale %s left: %v", stale, err)
	}
	if _, err := os.Stat(j.Path()); err != nil {
		t.Errorf("live journal gone: %v", err)
	}
}

// TestCompactParts: during the day, the parts merge into a compacted file
// once there are enough of them, the day's compacted files stay, and no row
// is lost or doubled; at the end of the day Compact makes one file.
func TestCompactParts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	MustFoldRuns(t, dir, "run-a", datatest.T0, 3, 2)
	if st, err := CompactParts(dir, datatest.T0, 4, slog.New(slog.DiscardHandler)); err != nil || st.Files != 0 {
		t.Fatalf("3 parts, minimum 4: %+v %v, want nothing done", st, err)
	}
	MustFoldRuns(t, dir, "run-b", datatest.T0.Add(time.Hour), 1, 2)
	if st, err := CompactParts(dir, datatest.T0, 4, slog.New(slog.DiscardHandler)); err != nil || st.Files != 4 || st.Rows != 8 {
		t.Fatalf("4 parts: %+v %v, want them merged", st, err)
	}
	MustFoldRuns(t, dir, "run-c", datatest.T0.Add(2*time.Hour), 4, 2)
	if st, err := CompactParts(dir, datatest.T0, 4, slog.New(slog.DiscardHandler)); err != nil || st.Files != 4 || st.Rows != 8 {
		t.Fatalf("4 more parts: %+v %v, want only them merged", st, err)
	}
	if got := files(t, dir); strings.Join(got, " ") != "merged-000001.parquet merged-000002.parquet" {
		t.Errorf("files %v, want two compacted files", got)
	}
	if n := mustCount(t, dir); n != 16 {
		t.Errorf("history has %d rows, want 16", n)
	}
	if _, err := Compact(dir, datatest.T0.Add(24*time.Hour), slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if got := files(t, dir); strings.Join(got, " ") != "merged-000003.parquet" {
		t.Errorf("files after the day %v, want one", got)
	}
	if n := mustCount(t, dir); n != 16 {
		t.Errorf("history has %d rows, want 16", n)
	}
}

// TestReadHistoryDuringCompaction: a reader that lists a day's files just
// before a compaction removes them reads the day again from what is left.
func TestReadHistoryDuringCompaction(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	MustFoldRuns(t, dir, "run", datatest.T0, 6, 5)
	if _, err := ReadParquet(filepath.Join(dir, "no-such.parquet")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing file reads as %v, want os.ErrNotExist", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := Compact(dir, datatest.T0.Add(24*time.Hour), slog.New(slog.DiscardHandler)); err != nil {
			t.Error(err)
		}
	}()
	for {
		select {
		case <-done:
			if n := mustCount(t, dir); n != 30 {
				t.Errorf("after compaction: %d rows, want 30", n)
			}
			return
		default:
		}
		if n := mustCount(t, dir); n != 30 {
			t.Fatalf("during compaction: %d rows, want 30", n)
		}
	}
}

// TestCompactRemovesCopies: merging today's parts and compacting a day
// remove the second copies of the files merged at once, so replica/
// mirrors results/: before, the copies of each merge stayed until the next
// compaction of their day, or the scrub, came to them (60 an hour, and a
// past day's last ones until the scrub).
func TestCompactRemovesCopies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	day := datatest.T0.Truncate(24 * time.Hour)
	files := func() (results, copies int) {
		r, _ := filepath.Glob(filepath.Join(data.Dir(dir).ResultDay(day), "*.parquet"))
		c, _ := filepath.Glob(filepath.Join(replicaOf(dir, data.Dir(dir).ResultDay(day)), "*.parquet"))
		return len(r), len(c)
	}
	for i := range 130 {
		at := day.Add(time.Duration(i) * time.Minute)
		MustFoldRuns(t, dir, "run-"+at.Format("20060102T1504"), at, 1, 2)
		if _, err := CompactParts(dir, at, 60, quiet); err != nil {
			t.Fatal(err)
		}
		if r, c := files(); r != c {
			t.Fatalf("minute %d: %d history files, %d second copies; want one copy each", i, r, c)
		}
	}
	if _, err := Compact(dir, day.AddDate(0, 0, 1), quiet); err != nil {
		t.Fatal(err)
	}
	if r, c := files(); r != 1 || c != 1 {
		t.Errorf("the day compacted: %d history files, %d second copies; want 1 and 1", r, c)
	}
}

// TestCopyRowsOfAPart: a part of one row copies into a compacted file in
// about a thousand allocations, not one page header a column for every row
// of the copy's buffer (42,000: a merge of an hour's parts read each
// part's pages 1,024 times over). Not parallel: AllocsPerRun counts the
// whole process's allocations.
func TestCopyRowsOfAPart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "part-run-1.parquet")
	if err := writeParquet(path, []ResultRow{RowOf(datatest.NewResult("s00001", datatest.T0, data.Working))}); err != nil {
		t.Fatal(err)
	}
	f, size, err := openParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := newHistoryWriter(io.Discard)
	allocs := testing.AllocsPerRun(3, func() {
		if n, err := copyRows(w.GenericWriter, f, size); n != 1 || err != nil {
			t.Fatalf("copied %d rows, %v; want the one", n, err)
		}
	})
	t.Logf("%.0f allocations", allocs)
	if allocs > 5000 {
		t.Errorf("copying a part of one row took %.0f allocations, want about a thousand", allocs)
	}
}
