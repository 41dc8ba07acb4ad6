package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"plug.directory/prober/data"
)

// ErrMinuteTaken is returned by Run when the minute was already run, or is
// being run by another process: a minute runs once.
var ErrMinuteTaken = errors.New("this minute was already run")

// markerKeep is how long minute markers are kept; older ones are removed by
// the next claim.
const markerKeep = 48 * time.Hour

// minuteMarker is the content of a minute's marker file.
type minuteMarker struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Claimed time.Time `json:"claimed"`
}

// markerPath returns the marker of the run of minute.
func markerPath(dir string, minute time.Time) string { return data.MinuteMarkerPath(dir, minute) }

// claimMinute creates the minute's marker, or fails with ErrMinuteTaken
// naming who claimed it. The marker is created with O_EXCL, so of two runs
// started together exactly one wins; it is never removed by the run, so a
// run killed half-way is not run again either (its completed checks are in
// its journal, and running the rest twice would break the host caps the
// planner counted).
func claimMinute(dir string, minute, now time.Time, pid int) error {
	path := markerPath(dir, minute)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("claim minute: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		var m minuteMarker
		b, _ := os.ReadFile(path)
		_ = json.Unmarshal(b, &m) // an unreadable marker still refuses
		return fmt.Errorf("run minute %s: %w by pid %d on %s at %s (marker %s); a minute runs once",
			minute.UTC().Format("2006-01-02 15:04"), ErrMinuteTaken, m.PID, m.Host,
			m.Claimed.UTC().Format(time.RFC3339), path)
	}
	if err != nil {
		return fmt.Errorf("claim minute: %w", err)
	}
	host, _ := os.Hostname()
	b, _ := json.Marshal(minuteMarker{PID: pid, Host: host, Claimed: now.UTC()})
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("claim minute %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("claim minute %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("claim minute %s: %w", path, err)
	}
	if err := data.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("claim minute: %w", err)
	}
	pruneMarkers(filepath.Dir(path), now.Add(-markerKeep))
	return nil
}

// pruneMarkers removes the markers of minutes before since. Failing to
// remove one is harmless: it only keeps refusing a minute long past.
func pruneMarkers(mdir string, since time.Time) {
	names, _ := filepath.Glob(filepath.Join(mdir, "*.json"))
	for _, p := range names {
		if t, ok := data.MinuteOfMarker(p); ok && t.Before(since) {
			os.Remove(p)
		}
	}
}
