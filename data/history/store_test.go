package history

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/datatest"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/data/spool/spooltest"
	"plug.directory/prober/internal/durable"
)

func TestFoldExactlyOnce(t *testing.T) {
	dir := t.TempDir()
	j := spooltest.MustJournal(t, dir, "run-1",
		datatest.NewResult("a", datatest.T0, data.Failing), datatest.NewResult("a", datatest.T0.Add(5*time.Minute), data.Failing), datatest.NewResult("b", datatest.T0, data.Working))
	active := spooltest.MustJournal(t, dir, "run-2", datatest.NewResult("c", datatest.T0.Add(time.Minute), data.NeedsKey))
	defer active.Close()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	// A live run's journal is seen by LoadStates but not folded.
	st, err := Fold(dir, datatest.T0, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if st.Journals != 1 || st.Results != 3 || st.Active != 1 {
		t.Fatalf("fold stats = %+v, want 1 journal, 3 results, 1 active", st)
	}
	states, bad, err := LoadStates(dir, datatest.T0)
	if err != nil || len(bad) > 0 {
		t.Fatalf("LoadStates: %v %v", err, bad)
	}
	if got := states["a"].FailingSince; !got.Equal(datatest.T0) {
		t.Errorf("S6 failing streak starts at %v, want %v", got, datatest.T0)
	}
	if states["a"].EverAnswered() || !states["b"].EverAnswered() || !states["c"].EverAnswered() {
		t.Errorf("ever answered wrong: %+v", states)
	}

	// A fold that crashed after writing Parquet but before removing the
	// journal is redone without writing the rows twice.
	if err := os.WriteFile(filepath.Join(data.Dir(dir).JournalDir(), "run-1.jsonl"), mustReadPart(t, dir), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Fold(dir, datatest.T0, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	active.Close()
	if _, err := Fold(dir, datatest.T0, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	got, bad, err := ReadHistory(dir, datatest.T0, datatest.T0)
	if err != nil || len(bad) > 0 {
		t.Fatalf("ReadHistory: %v %v", err, bad)
	}
	if len(got) != 4 {
		t.Fatalf("history has %d rows, want 4 (each check exactly once): %+v", len(got), got)
	}
	parts, _ := filepath.Glob(filepath.Join(data.Dir(dir).Results(), "*", "*.parquet"))
	total := 0
	for _, p := range parts {
		rs, err := ReadParquet(p)
		if err != nil {
			t.Fatal(err)
		}
		total += len(rs)
	}
	if total != 4 {
		t.Errorf("parquet holds %d rows, want 4", total)
	}
	if g := got[0]; g.ID != "a" || len(g.Tools) != 2 || g.Status != data.Failing {
		t.Errorf("round trip lost fields: %+v", g)
	}
}

// mustReadPart returns the JSON lines of the results written by run-1, as
// the journal was before the fold removed it.
func mustReadPart(t *testing.T, dir string) []byte {
	t.Helper()
	rs, err := ReadParquet(filepath.Join(data.Dir(dir).Results(), "date=2026-12-02", "part-run-1.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	j := spooltest.MustJournal(t, t.TempDir(), "copy", rs...)
	j.Close()
	b, err := os.ReadFile(j.Path())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestJournalTornTailAndBadLine(t *testing.T) {
	dir := t.TempDir()
	j := spooltest.MustJournal(t, dir, "run-x", datatest.NewResult("a", datatest.T0, data.Working))
	j.Close()
	f, err := os.OpenFile(j.Path(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("{not json}\n{\"id\":\"b\",\"sta") // a bad line, then a write cut by a crash
	f.Close()
	rs, bad, err := spool.ReadJournal(j.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].ID != "a" {
		t.Errorf("results = %+v, want only a", rs)
	}
	if len(bad) != 2 || !strings.Contains(bad[0].Error(), "run-x.jsonl:2:") ||
		!strings.HasPrefix(bad[1].Error(), j.Path()+":3: last line cut short: ") {
		t.Errorf("bad = %v, want errors naming run-x.jsonl:2 and the cut line 3", bad)
	}
}

func TestCorruptParquetNamed(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(data.Dir(dir).ResultDay(datatest.T0), "part-broken.parquet")
	if err := durable.WriteFileAtomic(p, []byte("PAR1 garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	j := spooltest.MustJournal(t, dir, "run-ok", datatest.NewResult("a", datatest.T0, data.Working))
	j.Close()
	got, bad, err := ReadHistory(dir, datatest.T0, datatest.T0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(bad) != 1 || !strings.Contains(bad[0].Error(), "part-broken.parquet") {
		t.Errorf("got %d results, bad %v; want 1 result and the corrupt file named", len(got), bad)
	}
}

// TestReadSmallParquetCheaply: a Parquet file of a few rows, as a run's
// part of a minute is, reads in a few hundred allocations. Read in batches
// of 1,024 rows, parquet-go read a page header for every row of the batch
// past the end, in every column: 35,000 allocations for 10 rows, 40% of a
// publish's time in the site's tests.
func TestReadSmallParquetCheaply(t *testing.T) {
	var rows []ResultRow
	for i := range 10 {
		rows = append(rows, RowOf(datatest.NewResult(fmt.Sprint("s", i), datatest.T0.Add(time.Duration(i)*time.Second), data.Working)))
	}
	path := filepath.Join(t.TempDir(), "part-small.parquet")
	if err := writeParquet(path, rows); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(3, func() {
		if got, err := ReadParquet(path); err != nil || len(got) != len(rows) {
			t.Fatalf("read %d rows, %v; want %d", len(got), err, len(rows))
		}
	})
	if allocs > 5000 {
		t.Errorf("reading %d rows took %.0f allocations, want at most 5,000", len(rows), allocs)
	}
}
