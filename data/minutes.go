package data

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A run claims its minute with a marker file (runner), named for the
// minute, under DIR/run/minutes/. The publisher reads the latest to say
// when checks last ran (status.json).

// minuteMarkerLayout names a minute's marker file, before ".json".
const minuteMarkerLayout = "2006-01-02T1504"

// MinuteMarkerPath returns the marker of the run of minute under the data
// directory dir.
func MinuteMarkerPath(dir string, minute time.Time) string {
	return filepath.Join(dir, "run", "minutes", minute.UTC().Format(minuteMarkerLayout)+".json")
}

// MinuteOfMarker returns the minute a marker file's path names, and false
// for a file that is not a marker.
func MinuteOfMarker(path string) (time.Time, bool) {
	name, ok := strings.CutSuffix(filepath.Base(path), ".json")
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(minuteMarkerLayout, name)
	return t, err == nil
}

// LastMinuteRun returns the latest minute a run has claimed under the data
// directory dir, zero when none has (no marker, or no marker directory).
func LastMinuteRun(dir string) (time.Time, error) {
	entries, err := os.ReadDir(filepath.Dir(MinuteMarkerPath(dir, time.Time{})))
	if errors.Is(err, fs.ErrNotExist) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read minute markers: %w", err)
	}
	var last time.Time
	for _, e := range entries {
		if t, ok := MinuteOfMarker(e.Name()); ok && t.After(last) {
			last = t
		}
	}
	return last, nil
}
