package data

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestJournalGroupCommit: appends from many goroutines at once all land,
// each as one whole line, and share fsyncs.
func TestJournalGroupCommit(t *testing.T) {
	t.Parallel()
	j := MustJournal(t, t.TempDir(), "run-many")
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			for i := range 50 {
				if err := j.Append(result(fmt.Sprintf("g%02d-%02d", g, i), t0.Add(time.Duration(i)*time.Second), Working)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	j.mu.Lock()
	batches := j.synced
	j.mu.Unlock()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	rs, bad, err := ReadJournal(j.Path())
	if err != nil || len(bad) > 0 {
		t.Fatalf("read journal: %v %v", err, bad)
	}
	seen := map[string]bool{}
	for _, r := range rs {
		seen[r.ID+r.Started.String()] = true
	}
	if len(rs) != 3200 || len(seen) != 3200 {
		t.Errorf("journal has %d lines, %d distinct, want 3200", len(rs), len(seen))
	}
	if batches >= 3200 {
		t.Errorf("%d fsyncs for 3200 concurrent appends: no group commit", batches)
	}
	t.Logf("3200 appends in %d fsyncs", batches)
}

// TestJournalBrokenStaysBroken: after a failed write, Append fails, never
// reporting durable a line that is not.
func TestJournalBrokenStaysBroken(t *testing.T) {
	t.Parallel()
	j := MustJournal(t, t.TempDir(), "run-broken", result("a", t0, Working))
	j.f.Close() // the disk goes away
	for i := range 2 {
		if err := j.Append(result(fmt.Sprintf("b%d", i), t0, Working)); err == nil {
			t.Errorf("append %d to a broken journal returned nil", i)
		}
	}
	if rs, _, _ := ReadJournal(j.Path()); len(rs) != 1 {
		t.Errorf("journal has %d results, want the 1 written before", len(rs))
	}
}
