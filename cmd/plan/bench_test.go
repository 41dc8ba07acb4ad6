package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/planner"
	"plug.directory/prober/planner/sim"
)

// benchStart is the first minute the benchmarks plan.
var benchStart = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// MustPlanDir prepares a data directory as production has it: a ranked
// list of n servers on n/10 hosts, one with n/20, each server checked at
// its last slot (a state each; one in twenty failing), and the ledger of a
// first plan.
func MustPlanDir(b *testing.B, n int) Config {
	b.Helper()
	return mustPlanDirOf(b, sim.Generate(sim.GenConfig{Servers: n, BigHost: n / 20, Base: benchStart.Add(-24 * time.Hour), Seed: 3}))
}

// mustPlanDirOf is MustPlanDir of a list of servers.
func mustPlanDirOf(b testing.TB, servers []data.Server) Config {
	b.Helper()
	dir := b.TempDir()
	var buf bytes.Buffer
	if err := lists.WriteServers(&buf, servers); err != nil {
		b.Fatal(err)
	}
	list := filepath.Join(dir, "servers.csv")
	if err := os.WriteFile(list, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	// One journal of a result per server, folded into the state snapshot.
	if err := os.MkdirAll(data.Dir(dir).JournalDir(), 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(filepath.Join(data.Dir(dir).JournalDir(), "seed.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for i, s := range servers {
		at := planner.LastSlot(s, benchStart)
		r := data.Result{ID: s.ID, URL: s.URL, Host: s.Host(), Reason: data.ReasonRoutine, Status: data.Working,
			Protocol: "2025-11-25", Transport: data.TransportStreamable, Planned: at, Started: at, Finished: at.Add(time.Second)}
		if i%20 == 0 {
			r.Status = data.Failing
		}
		if err := enc.Encode(r); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	if _, err := history.Fold(dir, slog.New(slog.DiscardHandler)); err != nil {
		b.Fatal(err)
	}
	cfg := Config{Servers: list, Data: dir, At: benchStart}
	cfg.Now = func() time.Time { return cfg.At.Add(-time.Minute) }
	if err := planMinute(context.Background(), cfg, io.Discard, discard()); err != nil {
		b.Fatal(err)
	}
	return cfg
}

// cpuTime returns the CPU time the process has used, user and system: on a
// shared machine a steadier measure than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS resets the kernel's high-water mark of the process's
// resident memory (Linux), so peakRSS measures only what follows.
func resetPeakRSS() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS returns the process's peak resident memory in MB since the last
// reset, 0 when unknown.
func peakRSS() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb float64
			fmt.Sscanf(strings.TrimSpace(v), "%f", &kb)
			return kb / 1024
		}
	}
	return 0
}

func discard() *slog.Logger {
	if os.Getenv("PLAN_BENCH_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

// BenchmarkPlanMinute plans one minute as cron does (`plan -servers -data`):
// read the ranked list, the states and the ledger, plan, write ledger and
// plan. The goal at 1,000,000 servers on 100,000 hosts (one with 50,000) is
// within twice the time of reading the list and under 1 GB (issue 21
// point 4): read_list alone is the baseline of the same run, and plan
// reads the list after each plan, off the clock, for its x-read-list
// (wall) and x-read-list-cpu, measured in the same minutes.
func BenchmarkPlanMinute(b *testing.B) {
	sizes := []int{100_000, 1_000_000}
	if os.Getenv("PLAN_BENCH_1M_ONLY") != "" {
		sizes = sizes[1:]
	}
	for _, n := range sizes {
		cfg := MustPlanDir(b, n)
		b.Run(fmt.Sprintf("read_list/%d", n), func(b *testing.B) {
			cpu := cpuTime()
			for b.Loop() {
				if _, _, err := lists.ReadServers(cfg.Servers); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
		})
		b.Run(fmt.Sprintf("load_states/%d", n), func(b *testing.B) {
			cpu := cpuTime()
			for b.Loop() {
				if _, _, err := history.LoadStates(cfg.Data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
		})
		b.Run(fmt.Sprintf("read_ledger/%d", n), func(b *testing.B) {
			cpu := cpuTime()
			for b.Loop() {
				if _, err := spool.ReadLedger(cfg.Data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
		})
		b.Run(fmt.Sprintf("plan/%d", n), func(b *testing.B) {
			runtime.GC()
			debug.FreeOSMemory()
			resetPeakRSS()
			cpu := cpuTime()
			var list, listCPU time.Duration // of a read of the list after each plan, off the clock
			for b.Loop() {
				cfg.At = cfg.At.Add(time.Minute)
				if err := planMinute(context.Background(), cfg, io.Discard, discard()); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				t, c := time.Now(), cpuTime()
				if _, _, err := lists.ReadServers(cfg.Servers); err != nil {
					b.Fatal(err)
				}
				list, listCPU = list+time.Since(t), listCPU+cpuTime()-c
				b.StartTimer()
			}
			planCPU := cpuTime() - cpu - listCPU
			b.ReportMetric(float64(planCPU.Milliseconds())/float64(b.N), "cpu-ms/op")
			// The goal, side by side in the same minutes: twice the list.
			b.ReportMetric(float64(b.Elapsed())/float64(list), "x-read-list")
			b.ReportMetric(float64(planCPU)/float64(listCPU), "x-read-list-cpu")
			if mb := peakRSS(); mb > 0 {
				b.ReportMetric(mb, "peak-RSS-MB")
			}
		})
	}
}
