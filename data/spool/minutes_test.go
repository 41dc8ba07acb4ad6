package spool

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"plug.directory/prober/data"
)

// TestLastMinuteRun: the latest marker's minute; zero with no marker
// directory; files that are not markers are passed over.
func TestLastMinuteRun(t *testing.T) {
	dir := t.TempDir()
	if got, err := LastMinuteRun(dir); err != nil || !got.IsZero() {
		t.Fatalf("no markers: %v, %v", got, err)
	}
	m := time.Date(2026, 12, 2, 10, 33, 0, 0, time.UTC)
	for _, p := range []string{data.Dir(dir).MinuteMarker(m), data.Dir(dir).MinuteMarker(m.Add(-time.Hour)), filepath.Join(dir, "run", "minutes", "notes.txt"), filepath.Join(dir, "run", "minutes", "2099-01-01.json")} {
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
	if got, ok := data.MinuteOfMarker(data.Dir(dir).MinuteMarker(m)); !ok || !got.Equal(m) {
		t.Errorf("MinuteOfMarker = %v, %v", got, ok)
	}
}

// TestMinuteRecorded: the latest minute marked recorded, never moved back
// by a run of an earlier minute that ends later; zero before any; a file
// that does not decode is an error and is replaced by the next mark.
func TestMinuteRecorded(t *testing.T) {
	dir := t.TempDir()
	if got, err := LastMinuteRecorded(dir); err != nil || !got.IsZero() {
		t.Fatalf("none: %v, %v", got, err)
	}
	m := time.Date(2026, 12, 2, 10, 33, 0, 0, time.UTC)
	for _, mark := range []time.Time{m.Add(-time.Minute), m.Add(20 * time.Second), m.Add(-2 * time.Minute)} {
		if err := MarkMinuteRecorded(dir, mark); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := LastMinuteRecorded(dir); err != nil || !got.Equal(m) {
		t.Errorf("LastMinuteRecorded = %v, %v; want %v", got, err, m)
	}
	if err := os.WriteFile(data.Dir(dir).Recorded(), []byte("{\"minute\":"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LastMinuteRecorded(dir); err == nil {
		t.Error("a torn file read without an error")
	}
	if err := MarkMinuteRecorded(dir, m.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, err := LastMinuteRecorded(dir); err != nil || !got.Equal(m.Add(-time.Hour)) {
		t.Errorf("after a torn file: %v, %v", got, err)
	}
}
