package spool

import (
	"testing"
	"time"

	"plug.directory/prober/data"
)

// TestLiveRuns: a run is going while a process holds its journal's lock;
// journals of other names, and unlocked ones, name no run going.
func TestLiveRuns(t *testing.T) {
	dir := t.TempDir()
	m := time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)
	live, err := CreateJournal(dir, data.RunJournal(m, 42))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	dead, err := CreateJournal(dir, data.RunJournal(m.Add(-time.Minute), 43))
	if err != nil {
		t.Fatal(err)
	}
	dead.Close()
	other, err := CreateJournal(dir, data.SimJournal(m.Add(time.Minute)))
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
