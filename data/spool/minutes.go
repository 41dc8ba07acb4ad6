package spool

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// A run claims its minute with a marker file (runner), named for the
// minute, under DIR/run/minutes/. The publisher reads the latest to say
// when checks last ran (status.json). data.Dir names the files.

// LastMinuteRun returns the latest minute a run has claimed under the data
// directory dir, zero when none has (no marker, or no marker directory).
func LastMinuteRun(dir string) (time.Time, error) {
	entries, err := os.ReadDir(data.Dir(dir).MinuteMarkers())
	if errors.Is(err, fs.ErrNotExist) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read minute markers: %w", err)
	}
	var last time.Time
	for _, e := range entries {
		if t, ok := data.MinuteOfMarker(e.Name()); ok && t.After(last) {
			last = t
		}
	}
	return last, nil
}

// recordedFile is the content of Dir.Recorded.
type recordedFile struct {
	Minute time.Time `json:"minute"`
}

// MarkMinuteRecorded notes that the run of minute recorded every planned
// check, unless a later minute is noted already (runs overlap and may end
// out of order). It replaces the file atomically.
func MarkMinuteRecorded(dir string, minute time.Time) error {
	minute = minute.UTC().Truncate(time.Minute)
	if last, err := LastMinuteRecorded(dir); err == nil && !last.Before(minute) {
		return nil
	}
	b, err := json.Marshal(recordedFile{Minute: minute})
	if err != nil {
		return fmt.Errorf("mark minute %s recorded: %w", minute.Format(time.RFC3339), err)
	}
	path := data.Dir(dir).Recorded()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("mark minute %s recorded: %w", minute.Format(time.RFC3339), err)
	}
	if err := durable.WriteFileAtomic(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("mark minute %s recorded: %w", minute.Format(time.RFC3339), err)
	}
	return nil
}

// LastMinuteRecorded returns the latest minute whose run recorded every
// planned check, zero when none has. A file that does not decode is an
// error (and counts as none: the next run's mark replaces it).
func LastMinuteRecorded(dir string) (time.Time, error) {
	b, err := os.ReadFile(data.Dir(dir).Recorded())
	if errors.Is(err, fs.ErrNotExist) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read the last minute recorded: %w", err)
	}
	var r recordedFile
	if err := json.Unmarshal(b, &r); err != nil {
		return time.Time{}, fmt.Errorf("read the last minute recorded %s: %w", data.Dir(dir).Recorded(), err)
	}
	return r.Minute.UTC(), nil
}
