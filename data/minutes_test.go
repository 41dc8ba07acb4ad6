package data

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLastMinuteRun: the latest marker's minute; zero with no marker
// directory; files that are not markers are passed over.
func TestLastMinuteRun(t *testing.T) {
	dir := t.TempDir()
	if got, err := LastMinuteRun(dir); err != nil || !got.IsZero() {
		t.Fatalf("no markers: %v, %v", got, err)
	}
	m := time.Date(2026, 12, 2, 10, 33, 0, 0, time.UTC)
	for _, p := range []string{MinuteMarkerPath(dir, m), MinuteMarkerPath(dir, m.Add(-time.Hour)), filepath.Join(dir, "run", "minutes", "notes.txt"), filepath.Join(dir, "run", "minutes", "2099-01-01.json")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := LastMinuteRun(dir); err != nil || !got.Equal(m) {
		t.Errorf("LastMinuteRun = %v, %v; want %v", got, err, m)
	}
	if got, ok := MinuteOfMarker(MinuteMarkerPath(dir, m)); !ok || !got.Equal(m) {
		t.Errorf("MinuteOfMarker = %v, %v", got, ok)
	}
}
