package runner

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// TestClaimMinute: a claim is written whole or not at all: a full disk
// leaves no marker, and the minute is claimed once there is room; an empty
// or damaged marker is no claim; a whole one refuses the minute naming who
// claimed it.
func TestClaimMinute(t *testing.T) {
	t.Parallel()
	minute := time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)
	now := minute.Add(-time.Second)
	diskFull := durable.Files{Write: func(*os.File, []byte) (int, error) { return 0, syscall.ENOSPC }}
	t.Run("disk_full_then_room", func(t *testing.T) {
		dir := t.TempDir()
		err := claimMinuteWith(diskFull, dir, minute, now, 41)
		if !errors.Is(err, syscall.ENOSPC) || errors.Is(err, ErrMinuteTaken) || !strings.Contains(err.Error(), markerPath(dir, minute)) {
			t.Errorf("disk full: %v; want ENOSPC naming the marker", err)
		}
		if names, _ := os.ReadDir(filepath.Dir(markerPath(dir, minute))); len(names) != 0 {
			t.Errorf("disk full left %v; want no marker, no temporary file", names)
		}
		if err := claimMinute(dir, minute, now, 42); err != nil {
			t.Fatalf("claim once there is room: %v", err)
		}
		err = claimMinute(dir, minute, now, 43)
		if !errors.Is(err, ErrMinuteTaken) || !strings.Contains(err.Error(), "by pid 42 on ") {
			t.Errorf("second claim: %v; want refused naming pid 42", err)
		}
	})
	for name, content := range map[string]string{"empty_marker": "", "torn_marker": `{"pid":4`, "flipped_marker": `{"pid":0,"host":"h","claimed":"0001-01-01T00:00:00Z"}`} {
		t.Run(name+"_is_no_claim", func(t *testing.T) {
			dir := t.TempDir()
			path := markerPath(dir, minute)
			os.MkdirAll(filepath.Dir(path), 0o755)
			os.WriteFile(path, []byte(content), 0o644)
			if err := claimMinute(dir, minute, now, 42); err != nil {
				t.Fatalf("claim over a marker %q: %v", content, err)
			}
			if m, ok := readMarker(path); !ok || m.PID != 42 {
				t.Errorf("marker %+v, want pid 42's claim", m)
			}
			if err := claimMinute(dir, minute, now, 43); !errors.Is(err, ErrMinuteTaken) {
				t.Errorf("second claim: %v; want refused", err)
			}
		})
	}
	t.Run("a_minute_as_old_as_the_markers_kept_runs_once", func(t *testing.T) {
		// The claim prunes the markers older than markerKeep: never the
		// one it wrote.
		dir := t.TempDir()
		later := minute.Add(markerKeep)
		if err := claimMinute(dir, minute, later, 42); err != nil {
			t.Fatalf("claim: %v", err)
		}
		if err := claimMinute(dir, minute, later, 43); !errors.Is(err, ErrMinuteTaken) {
			t.Errorf("second claim %s after: %v; want refused", markerKeep, err)
		}
	})
	t.Run("a_minute_older_than_the_markers_kept_is_refused", func(t *testing.T) {
		dir := t.TempDir()
		if err := claimMinute(dir, minute.Add(time.Hour), now.Add(time.Hour), 41); err != nil {
			t.Fatal(err)
		}
		later := minute.Add(markerKeep + time.Minute)
		err := claimMinute(dir, minute, later, 42)
		if !errors.Is(err, ErrMinuteTooOld) || !strings.Contains(err.Error(), "2030-06-01 12:00") || !strings.Contains(err.Error(), "a minute runs once") {
			t.Errorf("claim %s late: %v; want ErrMinuteTooOld naming the minute", later.Sub(minute), err)
		}
		if _, err := os.Stat(markerPath(dir, minute)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the refused minute has a marker: %v", err)
		}
		if _, ok := readMarker(markerPath(dir, minute.Add(time.Hour))); !ok {
			t.Error("a refused claim removed the marker of a later minute")
		}
	})
	t.Run("runs_racing_over_a_damaged_marker_one_claims", func(t *testing.T) {
		dir := t.TempDir()
		path := markerPath(dir, minute)
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.WriteFile(path, nil, 0o644)
		errs := make(chan error, 8)
		for pid := range 8 {
			go func() { errs <- claimMinute(dir, minute, now, 100+pid) }()
		}
		won := 0
		for range 8 {
			err := <-errs
			switch {
			case err == nil:
				won++
			case !errors.Is(err, ErrMinuteTaken):
				t.Errorf("a racing claim: %v; want claimed or refused", err)
			}
		}
		if won != 1 {
			t.Errorf("%d runs claimed the minute, want 1", won)
		}
	})
}

// TestPruneMarkers: a claim removes the markers that have just left the
// window by their names, and once an hour every marker before it, found
// by listing: one a minute that did not run left behind goes within the
// hour, as does a damaged one set aside, and no marker of a minute within
// the window ever goes.
func TestPruneMarkers(t *testing.T) {
	dir := t.TempDir()
	mdir := data.Dir(dir).MinuteMarkers()
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)
	for m := range 180 {
		if err := os.WriteFile(markerPath(dir, start.Add(time.Duration(m)*time.Minute)), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Damaged markers set aside by claims (replaceDamagedMarker): one of
	// a minute the hour's sweep prunes, one of a minute it keeps.
	oldDamaged, newDamaged := markerPath(dir, start.Add(30*time.Minute))+damagedMarker+"41", markerPath(dir, start.Add(150*time.Minute))+damagedMarker+"42"
	for _, p := range []string{oldDamaged, newDamaged} {
		if err := os.WriteFile(p, []byte("{\"pid\":"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A minute's claim: the minutes just before since go, the older stay
	// until the hour.
	since := start.Add(90*time.Minute - time.Second) // 11:29:59
	pruneMarkers(dir, since)
	for _, m := range []time.Time{start.Add(88 * time.Minute), start.Add(89 * time.Minute)} {
		if _, err := os.Stat(markerPath(dir, m)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the marker of %s, just out of the window, is still there: %v", m.Format("15:04"), err)
		}
	}
	if _, err := os.Stat(markerPath(dir, start.Add(87*time.Minute))); err != nil {
		t.Errorf("a marker older than the two just out went before the hour: %v", err)
	}
	if _, err := os.Stat(markerPath(dir, start.Add(90*time.Minute))); err != nil {
		t.Errorf("the marker of since's minute went: %v", err)
	}
	// On the hour, every marker before since goes.
	since = start.Add(120*time.Minute + 30*time.Second) // 12:00:30
	pruneMarkers(dir, since)
	es, err := os.ReadDir(mdir)
	if err != nil {
		t.Fatal(err)
	}
	within := 0
	for _, e := range es {
		m, ok := data.MinuteOfMarker(e.Name())
		if ok && m.Before(since) {
			t.Errorf("marker %s, before %s, left after the hour's sweep", e.Name(), since.Format("15:04:05"))
		}
		if ok {
			within++
		}
	}
	if within != 59 {
		t.Errorf("%d markers within the window left, want the 59 from 12:01", within)
	}
	if _, err := os.Stat(oldDamaged); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the damaged marker of 10:30 set aside is left after the hour's sweep: %v", err)
	}
	if _, err := os.Stat(newDamaged); err != nil {
		t.Errorf("the damaged marker of 12:30 set aside, within the window, went: %v", err)
	}
}
