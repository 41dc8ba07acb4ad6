package testutil

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSweepStale: what a test binary killed by its -timeout left on the RAM
// disk is removed by a later run; what a running test uses, and what is not
// ours, stays.
func TestSweepStale(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	now := time.Now()
	dirs := []struct {
		name string
		age  time.Duration
		kept bool
	}{
		{memPrefix + "left-by-a-timeout", staleAfter + time.Hour, false},
		{memPrefix + "in-use", 3 * time.Hour, true},
		{"someone-elses", 30 * 24 * time.Hour, true},
	}
	for _, d := range dirs {
		p := filepath.Join(root, d.name)
		if err := os.MkdirAll(filepath.Join(p, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		at := now.Add(-d.age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	sweepStale(root, now)
	for _, d := range dirs {
		_, err := os.Stat(filepath.Join(root, d.name))
		if kept := err == nil; kept != d.kept {
			t.Errorf("%s, %v old: kept %v, want %v", d.name, d.age, kept, d.kept)
		}
	}
}
