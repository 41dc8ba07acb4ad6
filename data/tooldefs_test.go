package data

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
