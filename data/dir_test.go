package data

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestDirLayout pins every name of the data directory: the layout is an
// on-disk format that plan, run and publish of different versions share,
// so a name that moved would lose a file.
func TestDirLayout(t *testing.T) {
	d := Dir("D")
	m := time.Date(2026, 12, 2, 10, 33, 0, 0, time.UTC)
	cases := []struct{ got, want string }{
		{d.Plan(m), "D/plans/2026-12-02/1033.jsonl"},
		{d.PlanLock(), "D/plans/.plan.lock"},
		{d.Ledger(), "D/plans/ledger.bin"},
		{d.LedgerDelta(), "D/plans/ledger-delta.bin"},
		{d.Journal(RunJournal(m, 4242)), "D/journal/run-20261202T1033-4242.jsonl"},
		{d.Journal(SimJournal(m)), "D/journal/sim-20261202T1033.jsonl"},
		{d.MinuteMarker(m), "D/run/minutes/2026-12-02T1033.json"},
		{d.Recorded(), "D/run/recorded.json"},
		{d.Interrupted(), "D/run/interrupted.jsonl"},
		{d.ToolDefSet("ab12"), "D/tooldefs/ab12.json"},
		{d.ResultDay(m), "D/results/date=2026-12-02"},
		{d.Replica(), "D/replica"},
		{d.State(), "D/state/states.bin"},
		{d.FoldLock(), "D/.fold.lock"},
		{d.HistoryDamage(), "D/damaged/history.jsonl"},
		{d.ServersCopy(), "D/servers/last-good.csv"},
		{d.ListNotice(), "D/servers/noticed.json"},
		{d.PausedCopy(), "D/paused/last-good.txt"},
		{d.PausedLocalCopy(), "D/paused/local-last-good.txt"},
		{d.SiteStore(), "D/site/state.bin"},
		{d.PauseRecord(), "D/site/pauses.jsonl"},
	}
	for _, c := range cases {
		if c.got != filepath.FromSlash(c.want) {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
	// A local minute is named by its UTC minute.
	if got := d.Plan(m.In(time.FixedZone("CET", 3600))); got != d.Plan(m) {
		t.Errorf("a plan's name follows the zone: %s", got)
	}
}

// TestDirNamesReadBack: each name a program reads back parses to what was
// formatted, and names that are not ours do not parse.
func TestDirNamesReadBack(t *testing.T) {
	m := time.Date(2026, 12, 2, 10, 33, 0, 0, time.UTC)
	journals := []struct {
		name    string
		minute  time.Time
		run, ok bool
	}{
		{RunJournal(m, 42), m, true, true},
		{"D/journal/" + RunJournal(m, 42) + ".jsonl", m, true, true},
		{"part-" + RunJournal(m, 42) + ".parquet", m, true, true},
		{SimJournal(m), m, false, true},
		{"part-" + SimJournal(m) + ".parquet", m, false, true},
		{"run-old-1", time.Time{}, false, false},
		{"run-1", time.Time{}, false, false},
		{"merged-000001.parquet", time.Time{}, false, false},
		{"20261202T1033", time.Time{}, false, false},
	}
	for _, j := range journals {
		got, run, ok := JournalMinute(j.name)
		if !got.Equal(j.minute) || run != j.run || ok != j.ok {
			t.Errorf("JournalMinute(%q) = %v, %v, %v; want %v, %v, %v", j.name, got, run, ok, j.minute, j.run, j.ok)
		}
	}
	if got, ok := MinuteOfMarker(Dir("D").MinuteMarker(m)); !ok || !got.Equal(m) {
		t.Errorf("MinuteOfMarker = %v, %v; want %v", got, ok, m)
	}
	for _, bad := range []string{"notes.txt", "2099-01-01.json"} {
		if _, ok := MinuteOfMarker(bad); ok {
			t.Errorf("MinuteOfMarker(%q) parsed", bad)
		}
	}
	if got := DayOf(Dir("D").ResultDay(m)); got != "2026-12-02" {
		t.Errorf("DayOf = %q", got)
	}
	if got := DayOf("D/results/other"); got != "" {
		t.Errorf("DayOf(other) = %q, want empty", got)
	}
}

// TestDirGlobs: the partitions and parts are found sorted, in the history
// and its copy alike, and nothing else under them is.
func TestDirGlobs(t *testing.T) {
	d := Dir(t.TempDir())
	day1 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	day2 := day1.AddDate(0, 0, 1)
	files := []string{
		filepath.Join(d.ResultDay(day2), "part-b.parquet"),
		filepath.Join(d.ResultDay(day1), "part-a.parquet"),
		filepath.Join(d.ResultDay(day1), ".part-c.parquet.tmp-1"),
		filepath.Join(d.Results(), "other", "x.parquet"),
		filepath.Join(d.Replica(), "date=2026-12-01", "part-a.parquet"),
		d.Journal("run-2"), d.Journal("run-1"), filepath.Join(d.JournalDir(), ".run-3.new"),
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, got []string, err error, want ...string) {
		t.Helper()
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s = %q, %v; want %q", what, got, err, want)
		}
	}
	days, err := d.ResultDays()
	check("ResultDays", days, err, d.ResultDay(day1), d.ResultDay(day2))
	parts, err := d.ResultParts()
	check("ResultParts", parts, err, files[1], files[0])
	copies, err := d.ReplicaParts()
	check("ReplicaParts", copies, err, files[4])
	journals, err := d.Journals()
	check("Journals", journals, err, d.Journal("run-1"), d.Journal("run-2"))
}
