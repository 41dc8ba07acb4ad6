package spool

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
)

func TestFingerprintTools(t *testing.T) {
	a := ToolDef{Name: "search", Description: "find", InputSchema: json.RawMessage(`{"properties":{},"type":"object"}`)}
	b := ToolDef{Name: "fetch", Annotations: json.RawMessage(`{"readOnlyHint":true}`)}
	h1, c1 := FingerprintTools([]ToolDef{a, b})
	h2, _ := FingerprintTools([]ToolDef{b, a})
	if h1 != h2 || len(h1) != 64 {
		t.Errorf("order changes the hash: %s %s", h1, h2)
	}
	a2 := a
	a2.Description = "find anything"
	if h3, _ := FingerprintTools([]ToolDef{a2, b}); h3 == h1 {
		t.Error("a changed description keeps the hash")
	}
	if h, c := FingerprintTools(nil); h != "" || c != nil {
		t.Errorf("no tools: %q %q", h, c)
	}
	dir := t.TempDir()
	if err := PutToolDefs(dir, h1, c1, time.Now()); err != nil {
		t.Fatal(err)
	}
	got, err := ReadToolDefs(dir, h1)
	if err != nil || len(got) != 2 || got[0].Name != "fetch" {
		t.Fatalf("read back %+v, %v", got, err)
	}
	if _, err := ReadToolDefs(dir, strings.Repeat("a", 64)); !errors.Is(err, ErrNoToolDefs) {
		t.Errorf("missing set: %v", err)
	}
	// A flipped byte is named, not believed.
	path := data.Dir(dir).ToolDefSet(h1)
	c1[3] ^= 1
	if err := os.WriteFile(path, c1, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadToolDefs(dir, h1); err == nil {
		t.Error("a corrupt set was read")
	}
	big := make([]byte, MaxToolDefsBytes+1)
	if err := PutToolDefs(dir, strings.Repeat("b", 64), big, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(data.Dir(dir).ToolDefSet(strings.Repeat("b", 64))); !errors.Is(err, os.ErrNotExist) {
		t.Error("a set over 1 MB was stored")
	}
}

// TestPruneToolDefs: the store keeps the sets checks still list (each
// listing moves the set's time on) and lets go of those none has listed
// for ToolDefsKeep, so it does not grow with every set ever seen. Times are
// the checks' own, on the prober's clock: a year from the wall clock here,
// as a simulated year has them.
func TestPruneToolDefs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now().AddDate(1, 0, 0)
	put := func(name string, at time.Time) string {
		hash, canonical := FingerprintTools([]ToolDef{{Name: name}})
		if err := PutToolDefs(dir, hash, canonical, at); err != nil {
			t.Fatal(err)
		}
		return hash
	}
	long := now.Add(-ToolDefsKeep - 24*time.Hour)
	old := put("gone", long)
	listed := put("still-listed", long)
	recent := put("recent", now.Add(-30*24*time.Hour))
	if n, err := PruneToolDefs(dir, long.Add(ToolDefsKeep)); err != nil || n != 0 {
		t.Fatalf("pruned %d (%v) of sets listed ToolDefsKeep ago to the day, want 0", n, err)
	}
	put("still-listed", now.Add(-time.Hour)) // a check lists it again
	n, err := PruneToolDefs(dir, now)
	if err != nil || n != 1 {
		t.Fatalf("pruned %d (%v), want 1", n, err)
	}
	if _, err := ReadToolDefs(dir, old); !errors.Is(err, ErrNoToolDefs) {
		t.Errorf("a set unlisted for longer than ToolDefsKeep: %v, want it gone", err)
	}
	for _, h := range []string{listed, recent} {
		if _, err := ReadToolDefs(dir, h); err != nil {
			t.Errorf("set %s: %v, want it kept", h[:8], err)
		}
	}
}
