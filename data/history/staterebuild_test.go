package history

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/datatest"
	"plug.directory/prober/data/spool/spooltest"
)

// MustFoldedHistory folds five runs into dir, rewriting the snapshot every
// third fold, so the state is a snapshot and deltas: a server failing since
// the first run, one held by a Retry-After, one that answered then failed
// once. It returns the states they make.
func MustFoldedHistory(tb testing.TB, dir string) map[string]data.State {
	tb.Helper()
	for i := range 5 {
		at := datatest.T0.Add(time.Duration(i) * time.Minute)
		held := datatest.NewResult("held", at, data.Refused)
		held.RetryAfter = at.Add(time.Hour)
		ok := datatest.NewResult("flaky", at, data.Working)
		if i == 4 {
			ok.Status = data.Failing
		}
		ok.Protocol, ok.Transport = "2025-11-25", data.TransportSSE
		spooltest.MustJournal(tb, dir, fmt.Sprintf("run-%d", i), datatest.NewResult("streak", at, data.Failing), held, ok).Close()
		if _, err := fold(dir, 3, datatest.T0, slog.New(slog.DiscardHandler)); err != nil {
			tb.Fatal(err)
		}
	}
	want, bad, err := LoadStates(dir, datatest.T0)
	if err != nil || len(bad) > 0 {
		tb.Fatal(err, bad)
	}
	return want
}

// asideIn is where a repair says the state files went.
func asideIn(dir string) string {
	return "state set aside in " + filepath.Join(data.Dir(dir).Damaged(), "state")
}

// TestStateRepair: a state file damaged or lost is set aside, named, and
// the state rebuilt from the history with every failing streak, Retry-After
// hold and learned transport as the folds made them.
func TestStateRepair(t *testing.T) {
	t.Parallel()
	flip := func(path string) func(t *testing.T) {
		return func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0x10
			os.WriteFile(path, b, 0o644)
		}
	}
	for _, tc := range []struct {
		name   string
		damage func(dir string) func(t *testing.T)
		named  string // in the report
		aside  func(dir string) string
	}{
		{"flipped_byte_in_a_delta", func(dir string) func(*testing.T) { return flip(deltaPath(dir, 4)) }, "state delta is damaged: checksum mismatch", asideIn},
		{"flipped_byte_in_the_snapshot", func(dir string) func(*testing.T) { return flip(data.Dir(dir).State()) }, "states.bin: state snapshot is damaged", asideIn},
		{"snapshot_deleted", func(dir string) func(*testing.T) {
			return func(*testing.T) { os.Remove(data.Dir(dir).State()) }
		}, "delta-000000001.bin missing", asideIn},
		{"state_directory_deleted", func(dir string) func(*testing.T) {
			return func(*testing.T) { os.RemoveAll(filepath.Dir(data.Dir(dir).State())) }
		}, "no " + "STATE", func(string) string { return "no state file to set aside and rebuilt" }},
		{"delta_truncated", func(dir string) func(*testing.T) {
			return func(*testing.T) { os.Truncate(deltaPath(dir, 5), 9) }
		}, "delta-000000005.bin: state delta is damaged", asideIn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			want := MustFoldedHistory(t, dir)
			tc.damage(dir)(t)
			start := time.Now()
			got, bad, err := LoadStates(dir, datatest.T0)
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			named := strings.ReplaceAll(tc.named, "STATE", data.Dir(dir).State())
			if len(bad) != 1 || !strings.Contains(bad[0].Error(), named) || !strings.Contains(bad[0].Error(), tc.aside(dir)) {
				t.Errorf("reported %v; want one report naming %q and where the state went", bad, named)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("rebuilt in %s:\n%+v\nwant\n%+v", took, got, want)
			}
			if got["streak"].FailingSince != datatest.T0 || got["held"].RetryAfter != datatest.T0.Add(4*time.Minute+time.Hour) {
				t.Errorf("streak failing since %v, held until %v; want %v and %v", got["streak"].FailingSince, got["held"].RetryAfter, datatest.T0, datatest.T0.Add(4*time.Minute+time.Hour))
			}
			// Once: the next reader has nothing to report, and folds go on.
			if _, bad, err := LoadStates(dir, datatest.T0); err != nil || len(bad) > 0 {
				t.Errorf("second read: %v %v; want nothing to report", bad, err)
			}
			spooltest.MustJournal(t, dir, "run-after", datatest.NewResult("streak", datatest.T0.Add(time.Hour), data.Working)).Close()
			if _, err := Fold(dir, datatest.T0, slog.New(slog.DiscardHandler)); err != nil {
				t.Fatal(err)
			}
			if got, _, err := LoadStates(dir, datatest.T0); err != nil || !got["streak"].FailingSince.IsZero() || len(got) != 3 {
				t.Errorf("after the next fold: %+v %v", got["streak"], err)
			}
		})
	}
}

// TestRebuildState: the state rebuilt on demand equals the one the folds
// made, the old files kept aside; a damaged history file is set aside,
// named, and the rest rebuilt.
func TestRebuildState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	want := MustFoldedHistory(t, dir)
	st, err := RebuildState(dir, datatest.T0)
	if err != nil || len(st.Bad) > 0 || st.States != 3 || st.Results != 15 {
		t.Fatalf("RebuildState: %+v %v; want 3 states from 15 results", st, err)
	}
	if got, bad, err := LoadStates(dir, datatest.T0); err != nil || len(bad) > 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("after the rebuild: %+v %v %v\nwant %+v", got, bad, err, want)
	}
	aside, _ := filepath.Glob(filepath.Join(data.Dir(dir).Damaged(), "state", "*"))
	if st.Aside == "" || len(aside) == 0 {
		t.Errorf("old state kept in %q: %v; want it kept", st.Aside, aside)
	}
	part := filepath.Join(data.Dir(dir).ResultDay(datatest.T0), "part-run-2.parquet")
	os.WriteFile(part, []byte("PAR1 not really"), 0o644)
	st, err = RebuildState(dir, datatest.T0)
	if err != nil || len(st.Bad) != 1 || !strings.Contains(st.Bad[0].Error(), "restored from its second copy") || st.Results != 15 {
		t.Fatalf("RebuildState with a damaged part: %+v %v; want it named, restored and 15 results", st, err)
	}
	os.WriteFile(part, []byte("PAR1 not really"), 0o644)
	os.WriteFile(replicaOf(dir, part), []byte("PAR1 not really either"), 0o644)
	st, err = RebuildState(dir, datatest.T0)
	if err != nil || len(st.Bad) != 1 || !strings.Contains(st.Bad[0].Error(), "lost to a damaged file") || st.Results != 12 {
		t.Fatalf("RebuildState with a part damaged in both copies: %+v %v; want it named and 12 results", st, err)
	}
	if _, err := os.Stat(part); !os.IsNotExist(err) {
		t.Errorf("damaged part still in the history: %v", err)
	}
}

// TestFoldRepairsState: a run's fold that meets a damaged delta rebuilds
// the state, its own results included, and goes on: the run does not fail
// its fold.
func TestFoldRepairsState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	MustFoldedHistory(t, dir)
	b, _ := os.ReadFile(deltaPath(dir, 5))
	b[len(b)-1] ^= 0x80
	os.WriteFile(deltaPath(dir, 5), b, 0o644)
	spooltest.MustJournal(t, dir, "run-next", datatest.NewResult("streak", datatest.T0.Add(time.Hour), data.Working), datatest.NewResult("new", datatest.T0.Add(time.Hour), data.Failing)).Close()
	st, err := Fold(dir, datatest.T0, slog.New(slog.DiscardHandler))
	if err != nil || st.Results != 2 {
		t.Fatalf("fold over a damaged delta: %+v %v", st, err)
	}
	got, bad, err := LoadStates(dir, datatest.T0)
	if err != nil || len(bad) > 0 || len(got) != 4 || !got["streak"].FailingSince.IsZero() || got["new"].FailingSince != datatest.T0.Add(time.Hour) ||
		got["held"].RetryAfter != datatest.T0.Add(4*time.Minute+time.Hour) {
		t.Errorf("after the fold: %v %v %+v", bad, err, got)
	}
}

// TestFirstFoldIsNotARepair: the first fold of a data directory writes the
// first history before the first state; that is no damaged state, and it
// says nothing of one (an operator reading "state damaged" on day one would
// look for a fault that is not there).
func TestFirstFoldIsNotARepair(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spooltest.MustJournal(t, dir, "run-first", datatest.NewResult("a", datatest.T0, data.Working), datatest.NewResult("b", datatest.T0, data.Failing)).Close()
	var logs strings.Builder
	st, err := Fold(dir, datatest.T0, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil || st.Results != 2 {
		t.Fatalf("first fold: %+v %v", st, err)
	}
	if strings.Contains(logs.String(), "damaged") || strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("first fold logged\n%s\nwant no repair", logs.String())
	}
	if _, err := os.Stat(data.Dir(dir).Damaged()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("first fold set something aside: %v", err)
	}
	got, bad, err := LoadStates(dir, datatest.T0)
	if err != nil || len(bad) > 0 || len(got) != 2 || got["b"].FailingSince != datatest.T0 {
		t.Errorf("after the first fold: %v %v %+v", bad, err, got)
	}
}

// TestFoldSetsDamagedJournalAside: a journal with a line that fails its
// checksum has its good lines folded, and is then kept aside under
// DATA/damaged byte for byte, not removed: nothing it recorded is lost, and
// it is never read again.
func TestFoldSetsDamagedJournalAside(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	j := spooltest.MustJournal(t, dir, "run-hurt", datatest.NewResult("a", datatest.T0, data.Working), datatest.NewResult("b", datatest.T0, data.Working))
	j.Close()
	b, err := os.ReadFile(j.Path())
	if err != nil {
		t.Fatal(err)
	}
	second := bytes.IndexByte(b, '\n') + 1
	i := second + bytes.Index(b[second:], []byte(`"id":"b"`))
	b[i+6] = 'c' // b's id becomes "c": its line's checksum no longer holds
	if err := os.WriteFile(j.Path(), b, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := Fold(dir, datatest.T0, slog.New(slog.DiscardHandler))
	if err != nil || st.Results != 1 || len(st.Bad) != 1 {
		t.Fatalf("fold: %+v %v, want 1 result and 1 bad line", st, err)
	}
	if _, err := os.Stat(j.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("journal still in place after the fold: %v", err)
	}
	aside, _ := filepath.Glob(filepath.Join(data.Dir(dir).Damaged(), "journal", "*"))
	if len(aside) != 1 {
		t.Fatalf("set aside: %v, want the one journal", aside)
	}
	if kept, err := os.ReadFile(aside[0]); err != nil || !bytes.Equal(kept, b) {
		t.Errorf("journal kept aside differs from the one folded (%v)", err)
	}
	got, _, err := LoadStates(dir, datatest.T0)
	if err != nil || len(got) != 1 || got["a"].LastStatus != data.Working {
		t.Errorf("states after the fold: %+v %v, want a alone", got, err)
	}
}
