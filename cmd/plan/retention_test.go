package main

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/internal/testutil"
)

// TestSimulateRetention runs three days of minutes of 40 servers (plan
// simulate 72h: a plan file a minute, a journal a minute, folded every
// hour) and checks each directory the simulation writes against its
// bound: plans/ keeps the minutes of spool.PlanKeep before the last (it
// kept all 4,320 before), journal/ is empty once folded, state/ holds the
// snapshot and at most its 60 deltas.
func TestSimulateRetention(t *testing.T) {
	dir := testutil.MemTempDir(t) // 4,320 plans and journals: counted, not crashed
	list := filepath.Join(dir, "servers.csv")
	start := time.Date(2100, 6, 1, 0, 0, 0, 0, time.UTC)
	const length = 72 * time.Hour
	MustRun(t, "-generate", "40", "-out", list, "-base", start.Format(time.RFC3339))
	sim := filepath.Join(dir, "sim")
	MustRun(t, "-simulate", length.String(), "-servers", list, "-data", sim, "-at", start.Format(time.RFC3339))

	last := start.Add(length - time.Minute)
	count := map[string]int{}
	err := filepath.WalkDir(sim, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(sim, path)
		top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		count[top]++
		if m, ok := data.MinuteOfPlan(path); ok && top == "plans" {
			count["plan files"]++
			if m.Before(last.Add(-spool.PlanKeep)) || m.After(last) {
				t.Errorf("plan of %s kept; want only the minutes from %s to %s", m, last.Add(-spool.PlanKeep), last)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what string
		max  int
	}{
		{"plan files", int(spool.PlanKeep/time.Minute) + 1},
		{"plans", int(spool.PlanKeep/time.Minute) + 1 + 2}, // and the ledger's two files
		{"journal", 0},
		{"state", 61},
	} {
		if count[tc.what] > tc.max {
			t.Errorf("%s: %d files after %s of minutes, want at most %d", tc.what, count[tc.what], length, tc.max)
		}
	}
	if count["plan files"] < int(spool.PlanKeep/time.Minute) {
		t.Errorf("%d plan files kept, want the %s before the last minute", count["plan files"], spool.PlanKeep)
	}
	t.Logf("files by directory after %s: %v", length, count)
}
