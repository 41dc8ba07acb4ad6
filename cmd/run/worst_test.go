package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/internal/testutil"
)

// The sizes the record of one check keeps to through each store, whatever
// the server answered, as the README documents them: a journal line is the
// bounded result and its checksum; a Parquet part of one bounded result
// takes at most 256 KiB (the worst, every field at its bound, takes some
// 121 KiB: the columns' statistics repeat long values); a server's file
// after one check at most 256 KiB.
const (
	maxWorstJournalLine = data.MaxRecordedBytes + 64
	maxWorstParquetPart = 256 << 10
	maxWorstServerFile  = 256 << 10
)

// TestWorstAnswerRecorded serves, on loopback, an answer that stays under
// the 1 MB an answer may take but names things as large as it can
// (testdata/worst-answer: a tool named with 100 KB of '<', which the lint
// reports three times; a tool, a server name and a description of 50 KB),
// and takes its check through run, its journal, the fold into Parquet and
// publish: the result is folded, the server's page shows it working, and
// the journal line, the Parquet part and the server's file stay within
// their documented sizes (before, the journal line was 1.8 MB,
// set aside as damaged, and the page stayed "not checked yet").
func TestWorstAnswerRecorded(t *testing.T) {
	t.Parallel()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "worst-answer", name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	var seen atomic.Int32
	s := startServer(t, mcpServer{seen: &seen, serverInfo: read("server-info.json"), tools: read("tools.json")})
	c := planOneCheck(t, "worst", s.url)
	res := c.run(t, "-lab", "-resolve", s.resolve, "-ca-file", s.caFile)

	if res.Status != data.Working || res.ToolCount != 2 || len(res.ToolProblems) < 3 {
		t.Errorf("result %s %q, %d tools, %d tool problems; want working, 2 tools, the lint's problems kept", res.Status, res.Detail, res.ToolCount, len(res.ToolProblems))
	}
	if got := seen.Load(); int(got) != res.Requests || got != 4 {
		t.Errorf("server received %d requests, the result says %d; want 4 (discover, initialize, initialized, tools/list)", got, res.Requests)
	}
	for _, p := range res.ToolProblems {
		if !strings.HasSuffix(p.Tool, data.TruncatedMarker) {
			t.Errorf("problem %s names a tool of %d bytes, not cut", p.Rule, len(p.Tool))
		}
	}
	// The journal was folded and removed: its line is the one a journal
	// of the result read back writes.
	j, err := spool.CreateJournal(t.TempDir(), "worst")
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(res); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	line, err := os.ReadFile(j.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(line) > maxWorstJournalLine || len(line) > spool.MaxJournalLine {
		t.Errorf("journal line of %d bytes, over the %d documented", len(line), maxWorstJournalLine)
	}
	var parts int
	for rel, b := range testutil.MustTree(t, filepath.Join(c.dir, "results")) {
		if strings.HasSuffix(rel, ".parquet") {
			parts++
			if len(b) > maxWorstParquetPart {
				t.Errorf("Parquet part %s of one result: %d bytes, over %d", rel, len(b), maxWorstParquetPart)
			}
			t.Logf("Parquet part %s: %d bytes", rel, len(b))
		}
	}
	if parts == 0 {
		t.Error("no Parquet part written")
	}

	f, out := c.publish(t, c.minute.Add(time.Minute))
	if f.Status != data.Working || f.LastResult == nil || f.LastResult.ToolCount != 2 {
		t.Errorf("published %s (%s), want working with 2 tools", f.Status, f.Label)
	}
	b, err := os.ReadFile(filepath.Join(out, "servers", "worst.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > maxWorstServerFile {
		t.Errorf("servers/worst.json: %d bytes, over %d", len(b), maxWorstServerFile)
	}
	t.Logf("journal line %d bytes, server file %d bytes", len(line), len(b))
}
