package data

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
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
	if err := PutToolDefs(dir, h1, c1); err != nil {
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
	path := filepath.Join(ToolDefsDir(dir), h1+".json")
	c1[3] ^= 1
	if err := os.WriteFile(path, c1, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadToolDefs(dir, h1); err == nil {
		t.Error("a corrupt set was read")
	}
	big := make([]byte, MaxToolDefsBytes+1)
	if err := PutToolDefs(dir, strings.Repeat("b", 64), big); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ToolDefsDir(dir), strings.Repeat("b", 64)+".json")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a set over 1 MB was stored")
	}
}

// TestJournalStoresToolDefs: a result's definitions go to the store, its
// line keeps only the hash, and the hash reaches Parquet.
func TestJournalStoresToolDefs(t *testing.T) {
	dir := t.TempDir()
	hash, canon := FingerprintTools([]ToolDef{{Name: "search"}})
	j, err := CreateJournal(dir, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	r := Result{ID: "a", URL: "https://a.example/mcp", Status: Working, ToolsHash: hash, ToolDefs: canon}
	if err := j.Append(r); err != nil {
		t.Fatal(err)
	}
	j.Close()
	b, _ := os.ReadFile(j.Path())
	var line map[string]any
	if err := json.Unmarshal(b, &line); err != nil || line["tools_hash"] != hash || len(line) == 0 {
		t.Errorf("journal line %s", b)
	}
	if defs, err := ReadToolDefs(dir, hash); err != nil || defs[0].Name != "search" {
		t.Errorf("stored set %+v, %v", defs, err)
	}
	path := filepath.Join(dir, "part.parquet")
	if err := parquet.WriteFile(path, []ResultRow{RowOf(r)}); err != nil {
		t.Fatal(err)
	}
	rs, err := ReadParquet(path)
	if err != nil || rs[0].ToolsHash != hash {
		t.Errorf("parquet: %+v, %v", rs, err)
	}
}

// TestReadParquetBeforeToolsHash reads a part written before the
// tools_hash column existed.
func TestReadParquetBeforeToolsHash(t *testing.T) {
	type oldRow struct {
		ID        string `parquet:"id"`
		Status    string `parquet:"status"`
		StartedAt int64  `parquet:"started_at,timestamp(millisecond)"`
	}
	path := filepath.Join(t.TempDir(), "old.parquet")
	if err := parquet.WriteFile(path, []oldRow{{ID: "a", Status: "working", StartedAt: 1764676800000}}); err != nil {
		t.Fatal(err)
	}
	rs, err := ReadParquet(path)
	if err != nil || len(rs) != 1 || rs[0].ID != "a" || rs[0].ToolsHash != "" {
		t.Errorf("old part: %+v, %v", rs, err)
	}
}

// TestPruneToolDefs: the store keeps the sets checks still list (each
// listing moves the set's time on) and lets go of those none has listed
// for ToolDefsKeep, so it does not grow with every set ever seen.
func TestPruneToolDefs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	put := func(name string) (string, string) {
		hash, canonical := FingerprintTools([]ToolDef{{Name: name}})
		if err := PutToolDefs(dir, hash, canonical); err != nil {
			t.Fatal(err)
		}
		return hash, filepath.Join(ToolDefsDir(dir), hash+".json")
	}
	old, oldPath := put("gone")
	listed, listedPath := put("still-listed")
	recent, recentPath := put("recent")
	long := now.Add(-ToolDefsKeep - 24*time.Hour)
	for _, p := range []string{oldPath, listedPath} {
		if err := os.Chtimes(p, long, long); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(recentPath, now.Add(-30*24*time.Hour), now.Add(-30*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	put("still-listed") // a check lists it again
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
