package history

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/datatest"
)

// TestSetAsideBounded: damaged/ keeps what was set aside within its
// bounds. Five files of 100 B are set aside a day apart, then a sixth:
// with the production bounds, the files older than DamagedKeep go; with a
// byte bound of 250 B, the oldest go until the rest fit. The file just set
// aside and the record of damage stay.
func TestSetAsideBounded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		last     time.Time // when the sixth is set aside
		maxBytes int64
		want     []int // the days of the first five kept
	}{
		{"age", datatest.T0.Add(DamagedKeep + 2*24*time.Hour + time.Second), DamagedBytes, []int{3, 4}},
		{"bytes", datatest.T0.AddDate(0, 0, 5), 250, []int{4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "state", "states.bin")
			aside := func(now time.Time) string {
				t.Helper()
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, make([]byte, 100), 0o644); err != nil {
					t.Fatal(err)
				}
				a, err := setAside(dir, path, now)
				if err != nil {
					t.Fatal(err)
				}
				return a
			}
			var asides []string
			for d := range 5 {
				asides = append(asides, aside(datatest.T0.AddDate(0, 0, d)))
			}
			if err := os.WriteFile(data.Dir(dir).HistoryDamage(), []byte("{}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			last := aside(tt.last)
			if tt.maxBytes != DamagedBytes {
				if err := pruneDamaged(dir, last, tt.last.Add(-DamagedKeep), tt.maxBytes); err != nil {
					t.Fatal(err)
				}
			}
			kept := []int{}
			for d, a := range asides {
				if _, err := os.Stat(a); err == nil {
					kept = append(kept, d)
				}
			}
			if !slices.Equal(kept, tt.want) {
				t.Errorf("kept the files of days %v, want %v", kept, tt.want)
			}
			for _, p := range []string{last, data.Dir(dir).HistoryDamage()} {
				if _, err := os.Stat(p); err != nil {
					t.Errorf("%s: %v", p, err)
				}
			}
		})
	}
}
