package history

import (
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/datatest"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/internal/durable"
	"plug.directory/prober/internal/testutil"
)

var benchStates = flag.Int("states", 1_000_000, "BenchmarkFoldMinute: servers in the state snapshot")

// mustStates writes a snapshot of n servers' state in a new data directory.
func mustStates(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	states := make(map[string]data.State, n)
	for i := range n {
		id := fmt.Sprintf("srv-%07d", i)
		states[id] = data.State{ID: id, URL: "https://" + id + ".example/mcp", LastCheck: datatest.T0, LastStatus: data.Working,
			LastAnswered: datatest.T0, Protocol: "2025-11-25", Transport: data.TransportStreamable}
	}
	if err := durable.WriteFileAtomic(data.Dir(dir).State(), encodeStates(0, states), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkLoadStates reads a million servers' state, as every plan and
// publish does.
func BenchmarkLoadStates(b *testing.B) {
	dir := mustStates(b, *benchStates)
	for b.Loop() {
		if _, _, err := LoadStates(dir, datatest.T0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadStatesOf reads the states of 3,000 servers of a million,
// as a plan does: LoadStates of the same snapshot is its baseline.
func BenchmarkLoadStatesOf(b *testing.B) {
	dir := mustStates(b, *benchStates)
	var ids []string
	for i := 0; i < *benchStates; i += *benchStates / 3000 {
		ids = append(ids, fmt.Sprintf("srv-%07d", i))
	}
	for b.Loop() {
		m, _, err := LoadStatesOf(dir, ids, datatest.T0)
		if err != nil || len(m) != len(ids) {
			b.Fatal(len(m), err)
		}
	}
}

// BenchmarkRewriteSnapshot rewrites a million servers' snapshot, as one
// fold in maxDeltas does.
func BenchmarkRewriteSnapshot(b *testing.B) {
	dir := mustStates(b, *benchStates)
	for b.Loop() {
		if err := rewriteSnapshot(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFoldMinute folds one minute's journal of 1,000 results into a
// snapshot of a million servers' state and the history, as every run does
// at its end.
func BenchmarkFoldMinute(b *testing.B) {
	dir := mustStates(b, *benchStates)
	run := 0
	for b.Loop() {
		b.StopTimer()
		j, err := spool.CreateJournal(dir, fmt.Sprintf("run-%d", run))
		if err != nil {
			b.Fatal(err)
		}
		for i := range 1000 {
			r := datatest.NewResult(fmt.Sprintf("srv-%07d", (run*1000+i)%*benchStates), datatest.T0.Add(time.Duration(run)*time.Minute), data.Working)
			r.URL = "https://" + r.ID + ".example/mcp"
			if err := j.Append(r); err != nil {
				b.Fatal(err)
			}
		}
		j.Close()
		run++
		b.StartTimer()
		if _, err := Fold(dir, datatest.T0, slog.New(slog.DiscardHandler)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRebuildState rebuilds a million servers' state from a day of
// history, one row each, in one compacted file: the cost of a repair,
// against BenchmarkLoadStates, the read it replaces once.
func BenchmarkRebuildState(b *testing.B) {
	dir := b.TempDir()
	rows := make([]ResultRow, *benchStates)
	for i := range rows {
		id := fmt.Sprintf("srv-%07d", i)
		r := datatest.NewResult(id, datatest.T0.Add(time.Duration(i)*time.Millisecond), data.Working)
		r.URL = "https://" + id + ".example/mcp"
		rows[i] = RowOf(r)
	}
	if err := writeParquet(filepath.Join(data.Dir(dir).ResultDay(datatest.T0), "merged-000001.parquet"), rows); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		stop := make(chan struct{})
		peak := testutil.SamplePeak("/memory/classes/heap/objects:bytes", stop) // live or not yet swept
		b.StartTimer()
		st, err := RebuildState(dir, datatest.T0)
		b.StopTimer()
		close(stop)
		if err != nil || st.States != *benchStates {
			b.Fatal(st, err)
		}
		b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
		b.StartTimer()
	}
}
