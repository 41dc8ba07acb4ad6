package history

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/datatest"
	"plug.directory/prober/data/spool/spooltest"
	"plug.directory/prober/internal/durable"
)

// benchResult is a check as a million servers' minute has them: a long
// id and address of their own, a server name and version, a few tool
// names, and figures that vary, so that no column compresses better than
// a real minute's would.
func benchResult(rng *rand.Rand, at time.Time) data.Result {
	word := func() string {
		b := make([]byte, 4+rng.IntN(8))
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return string(b)
	}
	id := "io.github." + word() + "/" + word() + "-mcp"
	host := word() + "." + word() + ".com"
	took := time.Duration(100+rng.IntN(5000)) * time.Millisecond
	r := data.Result{ID: id, URL: "https://" + host + "/mcp", Host: host,
		Reason: data.ReasonRoutine, Status: data.Outcomes[rng.IntN(5)], Started: at, Planned: at.Truncate(time.Second), Finished: at.Add(took),
		Lateness: time.Duration(rng.IntN(20)) * time.Millisecond, Duration: took, Requests: 2 + rng.IntN(3), Conns: 1, BytesRead: int64(500 + rng.IntN(30000)),
		ProberVersion: "v1.4.2", Protocol: "2025-11-25", Transport: data.TransportStreamable, HTTPStatus: 200}
	if r.Status == data.Working {
		r.ServerName, r.ServerVersion = word()+"-server", fmt.Sprintf("%d.%d.%d", rng.IntN(3), rng.IntN(20), rng.IntN(10))
		for range 1 + rng.IntN(12) {
			r.Tools = append(r.Tools, word()+"_"+word())
		}
		r.ToolCount = len(r.Tools)
		r.ToolsHash = fmt.Sprintf("%016x%016x%016x%016x", rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64())
	} else {
		r.Detail = "HTTP 502"
		r.HTTPStatus = 502
	}
	return r
}

// BenchmarkSecondCopyCost measures the disk a result row takes as a
// journal line (plain and gzipped: the second copy once suggested),
// in a minute's Parquet part of 1,000 rows (the copy kept: replica/), and
// in a compacted day, reported as bytes per row.
func BenchmarkSecondCopyCost(b *testing.B) {
	const minuteRows, dayRows = 1000, 100_000
	at := time.Date(2026, 12, 2, 19, 25, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	var minute []data.Result
	var rows []ResultRow
	for i := range dayRows {
		r := benchResult(rng, at.Add(time.Duration(i)*time.Millisecond*864+time.Duration(rng.IntN(1e6))))
		if i < minuteRows {
			minute = append(minute, r)
		}
		rows = append(rows, RowOf(r))
	}
	j := spooltest.MustJournal(b, b.TempDir(), "run-bench", minute...)
	j.Close()
	journal, err := os.ReadFile(j.Path())
	if err != nil {
		b.Fatal(err)
	}
	var gz bytes.Buffer
	w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	w.Write(journal)
	w.Close()
	part, err := encodeParquet("part", rows[:minuteRows])
	if err != nil {
		b.Fatal(err)
	}
	day, err := encodeParquet("day", rows)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
	}
	b.ReportMetric(float64(len(journal))/minuteRows, "journal-B/row")
	b.ReportMetric(float64(gz.Len())/minuteRows, "journal.gz-B/row")
	b.ReportMetric(float64(len(part))/minuteRows, "part-B/row")
	b.ReportMetric(float64(len(day))/dayRows, "compacted-B/row")
}

// BenchmarkScrub measures one Scrub of a history of files larger than
// ScrubBytes, which it reads one file and its copy a call: bytes verified
// per call and its time.
func BenchmarkScrub(b *testing.B) {
	dir := b.TempDir()
	at := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	// Ten days of 100,000 rows each, compacted: a file per day.
	for d := range 10 {
		MustCompactedDay(b, dir, at.AddDate(0, 0, d), 100_000, rand.New(rand.NewPCG(1, uint64(d))))
	}
	var st ScrubStats
	var err error
	for b.Loop() {
		if st, err = Scrub(dir, datatest.T0, slog.New(slog.DiscardHandler)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(st.Bytes), "B/call")
	b.ReportMetric(float64(st.Total), "history-B")
	os.RemoveAll(dir)
}

// MustCompactedDay writes a compacted day of n rows of their own (as
// BenchmarkSecondCopyCost's) spread over day, and its second copy, as a
// compaction leaves them, and returns the file's size.
func MustCompactedDay(tb testing.TB, dir string, day time.Time, n int, rng *rand.Rand) int64 {
	tb.Helper()
	rows := make([]ResultRow, 0, n)
	for i := range n {
		rows = append(rows, RowOf(benchResult(rng, day.Add(time.Duration(i)*24*time.Hour/time.Duration(n)))))
	}
	path := filepath.Join(data.Dir(dir).ResultDay(day), "merged-000001.parquet")
	body, err := encodeParquet(path, rows)
	if err != nil {
		tb.Fatal(err)
	}
	for _, p := range []string{path, replicaOf(dir, path)} {
		if err := durable.WriteFileAtomic(p, body, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return int64(len(body))
}
