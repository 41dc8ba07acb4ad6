package history

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/datatest"
	"plug.directory/prober/internal/durable"
	"plug.directory/prober/internal/testutil"
)

var (
	benchParts   = flag.Int("parts", 1440, "BenchmarkCompactDay: parts in the day (one per minute's run)")
	benchPartLen = flag.Int("part-rows", 700, "BenchmarkCompactDay: rows per part (a million servers checked daily is ~700 a minute)")
)

// BenchmarkCompactDay compacts one day of parts, by default a minute's
// part for each of 1,440 minutes with 700 checks each (about a million
// rows), and reports rows per second and the peak of the Go heap.
func BenchmarkCompactDay(b *testing.B) {
	src := b.TempDir()
	rows := 0
	for p := range *benchParts {
		rs := make([]ResultRow, *benchPartLen)
		for i := range rs {
			r := datatest.NewResult(fmt.Sprintf("srv-%07d", p*(*benchPartLen)+i), datatest.T0.Add(time.Duration(p)*time.Minute+time.Duration(i)*50*time.Millisecond), data.Working)
			r.Detail, r.ServerName, r.ServerVersion, r.Protocol = "2 tools", "server", "1.0.0", "2025-11-25"
			rs[i] = RowOf(r)
		}
		if err := writeParquet(filepath.Join(data.Dir(src).ResultDay(datatest.T0), fmt.Sprintf("part-run-%04d.parquet", p)), rs); err != nil {
			b.Fatal(err)
		}
		rows += len(rs)
	}
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		copyTree(b, src, dir)
		runtime.GC()
		stop := make(chan struct{})
		peak := testutil.SamplePeak("/memory/classes/heap/objects:bytes", stop) // live or not yet swept
		b.StartTimer()
		st, err := Compact(dir, datatest.T0.Add(24*time.Hour), slog.New(slog.DiscardHandler))
		b.StopTimer()
		close(stop)
		if err != nil || st.Rows != int64(rows) {
			b.Fatalf("compact: %+v %v, want %d rows", st, err, rows)
		}
		b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
		b.StartTimer()
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

func copyTree(tb testing.TB, from, to string) {
	tb.Helper()
	paths, _ := filepath.Glob(filepath.Join(from, "results", "*", "*.parquet"))
	for _, p := range paths {
		rel, _ := filepath.Rel(from, p)
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		if err := durable.WriteFileAtomic(filepath.Join(to, rel), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}
