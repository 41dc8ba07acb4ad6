package spool

import (
	"testing"
	"time"
)

// TestLiveRuns: a run is going while a process holds its journal's lock;
// journals of other names, and unlocked ones, name no run going.
func TestLiveRuns(t *testing.T) {
	dir := t.TempDir()
	m := time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)
	live, err := CreateJournal(dir, "run-"+m.Format(RunJournalLayout)+"-42")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	dead, err := CreateJournal(dir, "run-"+m.Add(-time.Minute).Format(RunJournalLayout)+"-43")
	if err != nil {
		t.Fatal(err)
	}
	dead.Close()
	other, err := CreateJournal(dir, "sim-"+m.Add(time.Minute).Format(RunJournalLayout))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	got, err := LiveRuns(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got[m.Unix()] {
		t.Errorf("LiveRuns = %v, want only %s", got, m)
	}
}
