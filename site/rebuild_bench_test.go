package site

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/internal/testutil"
)

var (
	benchDays           = flag.Int("bench.days", 7, "days of history, a check a day of every server and an hour of the hourly tier, in BenchmarkRebuild")
	benchRebuildServers = flag.Int("bench.rebuild-servers", 10_000, "servers listed in BenchmarkRebuild")
	benchRebuildSteps   = flag.Bool("bench.rebuild-steps", false, "log how long each step of BenchmarkRebuild's publish took, to stderr")
)

// benchHistory writes -bench.days days of history for servers, each day
// one journal folded into Parquet: a check a day of each server, and one
// an hour of those of the hourly tier, one in twenty failing.
func benchHistory(b *testing.B, f *fixture, servers []data.Server, days int) {
	b.Helper()
	for d := days; d >= 1; d-- {
		day := fixNow.Add(-time.Duration(d) * 24 * time.Hour)
		rs := make([]data.Result, 0, len(servers)+24*data.HourlyTierMaxRank)
		for i, s := range servers {
			checks := 1
			if data.Tier(s.Rank) == data.HourlyCadence {
				checks = 24
			}
			for h := range checks {
				o, detail := data.Working, ""
				if (i+d+h)%20 == 0 {
					o, detail = data.Failing, "connection refused"
				}
				rs = append(rs, result(s, day.Add(time.Duration(h)*time.Hour+time.Duration(i%3600)*time.Second), o, detail))
			}
		}
		appendConcurrently(b, f, rs)
		f.fold()
	}
}

// BenchmarkRebuild publishes -bench.rebuild-servers servers from nothing
// but the data directory: -bench.days days of history in Parquet, the
// state, the ledger (a full rebuild, Stats.Rebuilt), with the HTML
// preview and the default workers, as publish runs. It reports the CPU
// (and the system CPU of it), the bytes written, the files, the peak heap
// during the publish and the process's peak RSS; and, as ratios, its wall
// and CPU time over those of copying the tree it wrote (each file read and
// written again, as `cp -r` does), measured in the same run: x-copy-wall,
// x-copy-CPU.
func BenchmarkRebuild(b *testing.B) {
	f := newFixture(b)
	servers := benchList(b, f, *benchRebuildServers)
	if err := spool.WriteLedger(f.dir, benchLedger(servers)); err != nil {
		b.Fatal(err)
	}
	benchHistory(b, f, servers, *benchDays)
	cfg := f.config()
	cfg.Workers = 0
	if *benchRebuildSteps {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		defer logCores(cfg.Logger)()
	}
	var cpu, sys, copyCPU, copyWall time.Duration
	var wrote int64
	var peakHeap uint64
	var files int
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		for _, dir := range []string{f.out, filepath.Join(f.dir, "site")} {
			if err := os.RemoveAll(dir); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		cpu0, sys0, w0 := cpuTime(), sysTime(), writtenBytes()
		stop := testutil.HeapPeak()
		b.StartTimer()
		st, err := Publish(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		peak, _ := stop()
		peakHeap = max(peakHeap, peak)
		cpu += cpuTime() - cpu0
		sys += sysTime() - sys0
		wrote += writtenBytes() - w0
		if !st.Rebuilt || st.Rendered != len(servers) {
			b.Fatalf("not a full rebuild: %+v", st)
		}
		files = countFiles(b, f.out) + countFiles(b, filepath.Join(f.dir, "site"))
		to := filepath.Join(b.TempDir(), "copy")
		cpu0, wall0 := cpuTime(), time.Now()
		if err := os.CopyFS(to, os.DirFS(f.out)); err != nil {
			b.Fatal(err)
		}
		copyCPU += cpuTime() - cpu0
		copyWall += time.Since(wall0)
		if err := os.RemoveAll(to); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "CPU-ms/op")
	b.ReportMetric(float64(sys.Milliseconds())/float64(b.N), "sys-CPU-ms/op")
	b.ReportMetric(float64(wrote)/(1<<20)/float64(b.N), "written-MB/op")
	b.ReportMetric(float64(files), "files")
	b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MB")
	if copyCPU > 0 && copyWall > 0 {
		b.ReportMetric(float64(b.Elapsed())/float64(copyWall), "x-copy-wall")
		b.ReportMetric(float64(cpu)/float64(copyCPU), "x-copy-CPU")
	}
	reportPeakRSS(b)
}

// logCores logs, every second until stopped, the cores the process kept
// busy (its CPU time over the wall time), for -bench.rebuild-steps.
func logCores(log *slog.Logger) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		cpu0, wall0 := cpuTime(), time.Now()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			cpu, wall := cpuTime(), time.Now()
			log.Debug("busy", "cores", fmt.Sprintf("%.2f", float64(cpu-cpu0)/float64(wall.Sub(wall0))))
			cpu0, wall0 = cpu, wall
		}
	}()
	return func() { close(done) }
}

// sysTime returns the system time the process has used, of its CPU
// time: the file system's share, which other work on the machine's disk
// slows too.
func sysTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Stime.Nano())
}

// countFiles returns the regular files under dir.
func countFiles(tb testing.TB, dir string) int {
	tb.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// appendConcurrently appends rs to a new journal from 64 goroutines,
// which share their writes and fsyncs (spool.Journal.Append): a history
// of thousands of results is written in seconds, not an fsync each.
func appendConcurrently(tb testing.TB, f *fixture, rs []data.Result) {
	tb.Helper()
	f.journal++
	j, err := spool.CreateJournal(f.dir, fmt.Sprintf("run-bench%04d", f.journal))
	if err != nil {
		tb.Fatal(err)
	}
	errs := make(chan error, 64)
	for part := range slices.Chunk(rs, max(1, (len(rs)+63)/64)) {
		go func() {
			for _, r := range part {
				if err := j.Append(r); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range (len(rs) + max(1, (len(rs)+63)/64) - 1) / max(1, (len(rs)+63)/64) {
		if err := <-errs; err != nil {
			tb.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		tb.Fatal(err)
	}
}
