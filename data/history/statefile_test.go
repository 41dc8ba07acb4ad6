package history

import (
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/datatest"
	"plug.directory/prober/data/spool/spooltest"
	"plug.directory/prober/internal/durable"
)

func TestStateSnapshot(t *testing.T) {
	t.Parallel()
	full := data.State{ID: "a", URL: "https://a.example/mcp", LastCheck: datatest.T0, LastStatus: data.Failing, LastDetail: "HTTP 502",
		LastAnswered: datatest.T0.Add(-time.Hour), FailingSince: datatest.T0.Add(-5 * time.Minute), Protocol: "2025-11-25",
		Transport: data.TransportSSE, RetryAfter: datatest.T0.Add(time.Minute + time.Nanosecond)}
	states := map[string]data.State{"a": full, "b": {ID: "b"}, "ü": {ID: "ü", URL: "https://ü.example", LastStatus: data.NeedsKey, LastCheck: datatest.T0}}
	t.Run("round_trip", func(t *testing.T) {
		seq, got, err := decodeStates(stateFileOf(encodeStates(7, states)), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, states) || seq != 7 {
			t.Errorf("round trip: seq %d\n%+v\nwant 7\n%+v", seq, got, states)
		}
		_, some, err := decodeStates(stateFileOf(encodeStates(7, states)), func(id string) bool { return id == "a" })
		if err != nil || len(some) != 1 || !reflect.DeepEqual(some["a"], full) {
			t.Errorf("decode only a: %+v %v", some, err)
		}
	})
	t.Run("corrupt_named", func(t *testing.T) {
		b := encodeStates(1, states)
		for name, bad := range map[string][]byte{
			"flipped byte":   append(append([]byte{}, b[:20]...), append([]byte{b[20] ^ 1}, b[21:]...)...),
			"flipped sum":    append(append([]byte{}, b[:len(b)-1]...), b[len(b)-1]^1),
			"truncated":      b[:len(b)-7],
			"not a snapshot": []byte("hello world"),
		} {
			if _, _, err := decodeStates(stateFileOf(bad), nil); !errors.Is(err, durable.ErrDamaged) || !strings.Contains(err.Error(), "state snapshot is damaged") {
				t.Errorf("%s: err %v, want a damaged snapshot", name, err)
			}
		}
		dir := t.TempDir()
		if err := durable.WriteFileAtomic(data.Dir(dir).State(), b[:len(b)-1], 0o644); err != nil {
			t.Fatal(err)
		}
		if _, bad, err := LoadStates(dir, datatest.T0); err != nil || len(bad) != 1 || !strings.Contains(bad[0].Error(), "states.bin") {
			t.Errorf("LoadStates of a corrupt snapshot: %v %v, want it named and rebuilt", bad, err)
		}
	})
}

// TestStateDeltas: each fold writes only what it changed; every maxDeltas
// folds the snapshot is rewritten; a rewrite cut short by a crash leaves
// deltas the snapshot already holds, which must not bring older states back.
func TestStateDeltas(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	maxDeltas := 6
	if testing.Short() {
		maxDeltas = 3 // the same rewrite and leftovers in fewer folds; make test: 6
	}
	for i := range maxDeltas + 5 {
		at := datatest.T0.Add(time.Duration(i) * time.Minute)
		spooltest.MustJournal(t, dir, fmt.Sprintf("run-%03d", i), datatest.NewResult("shared", at, data.Working), datatest.NewResult(fmt.Sprintf("s%03d", i), at, data.Failing)).Close()
		if _, err := fold(dir, maxDeltas, datatest.T0, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatal(err)
		}
	}
	deltas, _ := listDeltas(dir)
	if _, err := os.Stat(data.Dir(dir).State()); err != nil || len(deltas) >= maxDeltas {
		t.Fatalf("after %d folds: snapshot %v, %d deltas; want the snapshot rewritten", maxDeltas+5, err, len(deltas))
	}
	check := func(when string) {
		t.Helper()
		got, bad, err := LoadStates(dir, datatest.T0)
		if err != nil || len(bad) > 0 {
			t.Fatalf("%s: %v %v", when, err, bad)
		}
		if len(got) != maxDeltas+6 || !got["shared"].LastCheck.Equal(datatest.T0.Add(time.Duration(maxDeltas+4)*time.Minute)) {
			t.Errorf("%s: %d states, shared last checked %v; want %d, at the last fold", when, len(got), got["shared"].LastCheck, maxDeltas+6)
		}
	}
	check("after the folds")

	// A rewrite that died before removing its deltas: an old delta holding
	// an older state of "shared" is still there.
	v, _ := readStates(dir, selection{})
	old := map[string]data.State{"shared": {ID: "shared", URL: v.states["shared"].URL, LastCheck: datatest.T0, LastStatus: data.Failing}}
	if err := writeDelta(dir, v.baseSeq, old); err != nil {
		t.Fatal(err)
	}
	check("with a leftover delta")
	if err := rewriteSnapshot(dir); err != nil {
		t.Fatal(err)
	}
	if deltas, _ := listDeltas(dir); len(deltas) != 0 {
		t.Errorf("deltas left after a rewrite: %v", deltas)
	}
	check("after a rewrite")

	// A delta lost (deleted by hand): named, not silently skipped, and the
	// state rebuilt from the history, which has every result.
	for i := range 2 {
		spooltest.MustJournal(t, dir, fmt.Sprintf("run-late-%d", i), datatest.NewResult("late", datatest.T0.Add(time.Hour), data.Working)).Close()
		if _, err := fold(dir, maxDeltas, datatest.T0, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatal(err)
		}
	}
	deltas, _ = listDeltas(dir)
	os.Remove(deltas[0].path)
	got, bad, err := LoadStates(dir, datatest.T0)
	if err != nil || len(bad) != 1 || !strings.Contains(bad[0].Error(), filepath.Base(deltas[0].path)+" missing") {
		t.Errorf("LoadStates with a delta lost: %v %v, want it named and the state rebuilt", bad, err)
	}
	if !got["late"].LastCheck.Equal(datatest.T0.Add(time.Hour)) || len(got) != maxDeltas+7 {
		t.Errorf("rebuilt: %d states, late %+v; want every server, late checked at %v", len(got), got["late"], datatest.T0.Add(time.Hour))
	}
}

// TestLoadStatesDuringFolds: a reader never misses a state while folds
// write deltas and rewrite the snapshot under it.
func TestLoadStatesDuringFolds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Four snapshot rewrites and deltas after; -short rewrites every 2
	// folds, make test every 4.
	maxDeltas := 4
	if testing.Short() {
		maxDeltas = 2
	}
	folds := 4*maxDeltas + 3
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range folds {
			spooltest.MustJournal(t, dir, fmt.Sprintf("run-%03d", i), datatest.NewResult(fmt.Sprintf("s%03d", i), datatest.T0, data.Working)).Close()
			if _, err := fold(dir, maxDeltas, datatest.T0, slog.New(slog.DiscardHandler)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	seen := 0
	for {
		select {
		case <-done:
			if got, _, _ := LoadStates(dir, datatest.T0); len(got) != folds {
				t.Errorf("after the folds: %d states, want %d", len(got), folds)
			}
			return
		default:
		}
		got, bad, err := LoadStates(dir, datatest.T0)
		if err != nil || len(bad) > 0 {
			t.Fatalf("LoadStates during folds: %v %v", err, bad)
		}
		if len(got) < seen {
			t.Fatalf("LoadStates saw %d states after %d: a state went missing", len(got), seen)
		}
		seen = len(got)
	}
}

// TestLoadStatesOf: the states of the servers kept are those LoadStates
// gives, snapshot, deltas and unfolded journals applied alike; no other
// server has an entry, not even one with a result in a journal.
func TestLoadStatesOf(t *testing.T) {
	dir := t.TempDir()
	j := spooltest.MustJournal(t, dir, "run-1", datatest.NewResult("a", datatest.T0, data.Failing), datatest.NewResult("b", datatest.T0, data.Working), datatest.NewResult("c", datatest.T0, data.Working))
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Fold(dir, datatest.T0, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	active := spooltest.MustJournal(t, dir, "run-2", datatest.NewResult("a", datatest.T0.Add(5*time.Minute), data.Working), datatest.NewResult("c", datatest.T0.Add(5*time.Minute), data.Failing),
		datatest.NewResult("d", datatest.T0.Add(5*time.Minute), data.Working))
	defer active.Close()
	all, bad, err := LoadStates(dir, datatest.T0)
	if err != nil || len(bad) > 0 || len(all) != 4 {
		t.Fatalf("LoadStates: %v %v %v, want 4 states", all, bad, err)
	}
	got, bad, err := LoadStatesOf(dir, []string{"b", "a", "b"}, datatest.T0)
	if err != nil || len(bad) > 0 {
		t.Fatalf("LoadStatesOf: %v %v", err, bad)
	}
	want := map[string]data.State{"a": all["a"], "b": all["b"]}
	if !maps.EqualFunc(got, want, func(x, y data.State) bool { return reflect.DeepEqual(x, y) }) {
		t.Errorf("LoadStatesOf a, b = %+v, want %+v", got, want)
	}
	if got["a"].LastStatus != data.Working || !got["a"].LastAnswered.Equal(datatest.T0.Add(5*time.Minute)) {
		t.Errorf("LoadStatesOf missed the unfolded journal: %+v", got["a"])
	}
	if got, _, _ := LoadStatesOf(dir, nil, datatest.T0); !reflect.DeepEqual(got, all) {
		t.Errorf("LoadStatesOf with no filter = %+v, want %+v", got, all)
	}
}

// stateFileOf returns the stateFile of the bytes b, a snapshot.
func stateFileOf(b []byte) stateFile {
	return stateFile{string(b), crc32.Checksum(b, durable.Castagnoli), "snapshot"}
}
