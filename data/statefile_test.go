package data

import (
	"bytes"
	"encoding/gob"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestStateSnapshot(t *testing.T) {
	t.Parallel()
	full := State{ID: "a", URL: "https://a.example/mcp", LastCheck: t0, LastStatus: Failing, LastDetail: "HTTP 502",
		LastAnswered: t0.Add(-time.Hour), FailingSince: t0.Add(-5 * time.Minute), Protocol: "2025-11-25",
		Transport: TransportSSE, RetryAfter: t0.Add(time.Minute + time.Nanosecond)}
	states := map[string]State{"a": full, "b": {ID: "b"}, "ü": {ID: "ü", URL: "https://ü.example", LastStatus: NeedsKey, LastCheck: t0}}
	t.Run("round_trip", func(t *testing.T) {
		got, err := decodeStates(encodeStates(states))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, states) {
			t.Errorf("round trip:\n%+v\nwant\n%+v", got, states)
		}
	})
	t.Run("corrupt_named", func(t *testing.T) {
		b := encodeStates(states)
		for name, bad := range map[string][]byte{
			"flipped byte":   append(append([]byte{}, b[:20]...), append([]byte{b[20] ^ 1}, b[21:]...)...),
			"truncated":      b[:len(b)-7],
			"not a snapshot": []byte("hello world"),
		} {
			if _, err := decodeStates(bad); !errors.Is(err, errStateCorrupt) {
				t.Errorf("%s: err %v, want a corrupt snapshot", name, err)
			}
		}
		dir := t.TempDir()
		if err := WriteFileAtomic(StatePath(dir), b[:len(b)-1], 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := LoadStates(dir); err == nil || !bytes.Contains([]byte(err.Error()), []byte("states.bin")) {
			t.Errorf("LoadStates of a corrupt snapshot: %v, want an error naming the file", err)
		}
	})
	t.Run("legacy_gob_read_then_replaced", func(t *testing.T) {
		dir := t.TempDir()
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode([]State{full}); err != nil {
			t.Fatal(err)
		}
		if err := WriteFileAtomic(filepath.Join(dir, "state", "states.gob"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		got, bad, err := LoadStates(dir)
		if err != nil || len(bad) > 0 || !got["a"].LastCheck.Equal(t0) || got["a"].Transport != TransportSSE {
			t.Fatalf("LoadStates of a gob snapshot: %+v %v %v", got, bad, err)
		}
		MustJournal(t, dir, "run-1", result("c", t0, Working)).Close()
		if _, err := Fold(dir, discard()); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(StatePath(dir)); err != nil {
			t.Fatalf("no binary snapshot after a fold: %v", err)
		}
		got, _, _ = LoadStates(dir)
		if len(got) != 2 || got["a"].FailingSince.IsZero() {
			t.Errorf("after the fold: %+v, want a (from the gob) and c", got)
		}
	})
}
