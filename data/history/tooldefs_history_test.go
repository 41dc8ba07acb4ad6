package history

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
)

// TestJournalStoresToolDefs: a result's definitions go to the store, its
// line keeps only the hash, and the hash reaches Parquet.
func TestJournalStoresToolDefs(t *testing.T) {
	dir := t.TempDir()
	hash, canon := spool.FingerprintTools([]spool.ToolDef{{Name: "search"}})
	j, err := spool.CreateJournal(dir, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	r := data.Result{ID: "a", URL: "https://a.example/mcp", Status: data.Working, ToolsHash: hash, ToolDefs: canon}
	if err := j.Append(r); err != nil {
		t.Fatal(err)
	}
	j.Close()
	b, _ := os.ReadFile(j.Path())
	var line map[string]any
	if err := json.Unmarshal(b, &line); err != nil || line["tools_hash"] != hash || len(line) == 0 {
		t.Errorf("journal line %s", b)
	}
	if defs, err := spool.ReadToolDefs(dir, hash); err != nil || defs[0].Name != "search" {
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
