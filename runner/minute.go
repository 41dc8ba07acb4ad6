package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// ErrMinuteTaken is returned by Run when the minute was already run, or is
// being run by another process: a minute runs once.
var ErrMinuteTaken = errors.New("this minute was already run")

// ErrMinuteTooOld is returned by Run for a minute older than markerKeep:
// its marker, if it was run, is gone, so running it could run it twice.
var ErrMinuteTooOld = errors.New("the minute is older than the record of the minutes run")

// markerKeep is how long minute markers are kept; older ones are removed by
// the next claim, and older minutes are not run (ErrMinuteTooOld).
const markerKeep = 48 * time.Hour

// minuteMarker is the content of a minute's marker file.
type minuteMarker struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Claimed time.Time `json:"claimed"`
}

// markerPath returns the marker of the run of minute.
func markerPath(dir string, minute time.Time) string { return data.Dir(dir).MinuteMarker(minute) }

// claimMinute creates the minute's marker, or fails with ErrMinuteTaken
// naming who claimed it, or ErrMinuteTooOld (see claimMinuteWith).
func claimMinute(dir string, minute, now time.Time, pid int) error {
	return claimMinuteWith(durable.Files{}, dir, minute, now, pid)
}

// claimMinuteWith creates the minute's marker through fs, whole or not at
// all (durable.Files.CreateFileAtomic): of two runs started together exactly
// one wins, and a full disk leaves no marker, so the minute can be claimed
// once there is room. A marker that does not decode (torn by an older
// version, or damaged) is no claim: it is set aside and the minute claimed.
// The marker is never removed by the run, so a run killed half-way is not
// run again either (its completed checks are in its journal, and running
// the rest twice would break the host caps the planner counted). Markers
// are kept for markerKeep, so a minute older than that is refused: whether
// it ran can no longer be told, and its marker would be pruned at once.
func claimMinuteWith(fs durable.Files, dir string, minute, now time.Time, pid int) error {
	path := markerPath(dir, minute)
	if since := now.Add(-markerKeep); minute.Before(since) {
		return fmt.Errorf("run minute %s: %w (markers are kept %s, since %s); a minute runs once",
			minute.UTC().Format("2006-01-02 15:04"), ErrMinuteTooOld, markerKeep, since.UTC().Format("2006-01-02 15:04"))
	}
	host, _ := os.Hostname()
	b, _ := json.Marshal(minuteMarker{PID: pid, Host: host, Claimed: now.UTC()})
	b = append(b, '\n')
	err := fs.CreateFileAtomic(path, b, 0o644)
	if errors.Is(err, os.ErrExist) {
		m, ok := readMarker(path)
		if !ok {
			m, ok, err = replaceDamagedMarker(fs, path, b, pid)
		}
		if ok {
			return fmt.Errorf("run minute %s: %w by pid %d on %s at %s (marker %s); a minute runs once",
				minute.UTC().Format("2006-01-02 15:04"), ErrMinuteTaken, m.PID, m.Host,
				m.Claimed.UTC().Format(time.RFC3339), path)
		}
	}
	if err != nil {
		return fmt.Errorf("claim minute: %w", err)
	}
	pruneMarkers(dir, now.Add(-markerKeep))
	return nil
}

// replaceDamagedMarker sets the damaged marker at path aside and claims
// the minute with b, under a lock, so that of two runs finding it only one
// claims; ok reports that another run's whole marker was found instead.
func replaceDamagedMarker(fs durable.Files, path string, b []byte, pid int) (m minuteMarker, ok bool, err error) {
	unlock, err := durable.LockFile(filepath.Join(filepath.Dir(path), ".claim.lock"))
	if err != nil {
		return m, false, err
	}
	defer unlock()
	if m, ok := readMarker(path); ok {
		return m, true, nil
	}
	if err := os.Rename(path, path+damagedMarker+strconv.Itoa(pid)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return m, false, fmt.Errorf("set aside a damaged marker: %w", err)
	}
	err = fs.CreateFileAtomic(path, b, 0o644)
	if errors.Is(err, os.ErrExist) {
		// A run that found no marker at all, once it was set aside.
		if m, ok := readMarker(path); ok {
			return m, true, nil
		}
	}
	return m, false, err
}

// damagedMarker and a pid end the name of a marker that did not decode,
// set aside by the run of that pid (replaceDamagedMarker) for an operator
// to read; it is pruned as the marker it was.
const damagedMarker = ".damaged-"

// readMarker reads a minute's marker; ok is false when it does not decode
// into a claim (empty, torn, damaged).
func readMarker(path string) (m minuteMarker, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(b, &m) != nil || m.PID <= 0 || m.Claimed.IsZero() {
		return m, false
	}
	return m, true
}

// pruneMarkers removes the markers of minutes before since from the data
// directory dir. Each claim removes the ones that have just fallen out of
// the window, by their names; once an hour (since on the hour), every one
// before since, found by listing the directory: a minute that did not
// run, or a clock stepped, leaves one the names miss, and a damaged one
// set aside is kept as long as its minute's marker would be. Listing the
// directory each minute (48 hours of markers) was 15 % of the CPU of a
// run of the prober's minutes. Failing to remove one is harmless: it only
// keeps refusing a minute long past.
func pruneMarkers(dir string, since time.Time) {
	for t := since.Truncate(time.Minute); !t.Before(since.Add(-2 * time.Minute)); t = t.Add(-time.Minute) {
		if t.Before(since) {
			os.Remove(markerPath(dir, t))
		}
	}
	if since.Minute() != 0 {
		return
	}
	names, _ := filepath.Glob(filepath.Join(data.Dir(dir).MinuteMarkers(), "*.json*"))
	for _, p := range names {
		marker, _, _ := strings.Cut(filepath.Base(p), damagedMarker)
		if t, ok := data.MinuteOfMarker(marker); ok && t.Before(since) {
			os.Remove(p)
		}
	}
}
