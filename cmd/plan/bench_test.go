package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
// its last slot (a state each; one in twenty failing), the ledger of a
// first plan, and a paused list of one server in 10,000, by id or (one in
// five) by address, as pull requests leave it (rule R1).
func MustPlanDir(b *testing.B, n int) Config {
	b.Helper()
	servers := sim.Generate(sim.GenConfig{Servers: n, BigHost: n / 20, Base: benchStart.Add(-24 * time.Hour), Seed: 3})
	cfg := mustPlanDirOf(b, servers)
	var paused []string
	for i := 0; i < len(servers); i += 10_000 {
		if s := servers[i]; i%50_000 == 0 && s.URL != "" {
			paused = append(paused, s.URL)
		} else {
			paused = append(paused, s.ID)
		}
	}
	cfg.Paused = mustWriteLines(b, filepath.Join(b.TempDir(), "paused.txt"), paused)
	return cfg
}

// mustPlanDirOf is MustPlanDir of a list of servers, without a paused list.
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
	results := make([]data.Result, len(servers))
	for i, s := range servers {
		at := planner.LastSlot(s, benchStart)
		results[i] = data.Result{ID: s.ID, URL: s.URL, Host: s.Host(), Reason: data.ReasonRoutine, Status: data.Working,
			Protocol: "2025-11-25", Transport: data.TransportStreamable, Planned: at, Started: at, Finished: at.Add(time.Second)}
		if i%20 == 0 {
			results[i].Status = data.Failing
		}
	}
	mustFold(b, dir, "seed", results)
	cfg := Config{Servers: list, Data: dir, At: benchStart}
	cfg.Now = func() time.Time { return cfg.At.Add(-time.Minute) }
	if err := planMinute(context.Background(), cfg, io.Discard, discard()); err != nil {
		b.Fatal(err)
	}
	return cfg
}

// resultsOf returns what the checks of a plan found, as the runner records
// them: a result for each server a check is for (its Also too), started at
// its planned second and a second long, failing where failing(k) of the
// k-th check.
func resultsOf(checks []data.PlannedCheck, failing func(k int) bool) []data.Result {
	var results []data.Result
	for k, c := range checks {
		r := data.Result{ID: c.ID, URL: c.URL, Host: c.Host, Planned: c.At, Started: c.At, Finished: c.At.Add(time.Second), Status: data.Working}
		if failing(k) {
			r.Status = data.Failing
		}
		results = append(results, r)
		for _, o := range c.Also {
			r.ID, r.URL = o.ID, o.URL
			results = append(results, r)
		}
	}
	return results
}

// mustFold writes results as the journal name of the data directory dir,
// without the runner's fsync a line, and folds it into the history and
// the states, as the runner does at the end of its run.
func mustFold(b testing.TB, dir, name string, results []data.Result) {
	b.Helper()
	if err := os.MkdirAll(data.Dir(dir).JournalDir(), 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(data.Dir(dir).Journal(name))
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, r := range results {
		if err := enc.Encode(r); err != nil {
			b.Fatal(err)
		}
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		b.Fatal(err)
	}
	if _, err := history.Fold(dir, testNow, slog.New(slog.DiscardHandler)); err != nil {
		b.Fatal(err)
	}
}

// mustWriteLines writes lines, each ended by a newline, as the file at
// path, and returns path.
func mustWriteLines(b testing.TB, path string, lines []string) string {
	b.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// cpuTime returns the CPU time the process has used, user and system: on a
// shared machine a steadier measure than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// freeAndResetPeak returns the garbage of what came before to the system
// and resets the peak RSS, so that the next peakRSS is of what follows.
func freeAndResetPeak() {
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS()
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

// BenchmarkPlanMinute plans one minute as cron does (`plan -servers
// -paused -data`): read the ranked list, the paused list, the states and
// the ledger, plan, write ledger and plan. The goal at 1,000,000 servers on
// 100,000 hosts (one with 50,000) is within twice the time of reading the
// list and under 1 GB: read_list alone is the baseline
// of the same run, and plan reads the list after each plan, off the clock,
// for its x-read-list (wall) and x-read-list-cpu, measured in the same
// minutes. After each plan, off the clock too, the results of the minute
// before are folded, as its run does while the next minute is planned: a
// plan sees the results of every check but the last minute's, as in
// production, and one plan costs what the thousandth does (without them
// the checks planned pile up unanswered, a few hundred a minute, and each
// plan looks at more states than the one before).
func BenchmarkPlanMinute(b *testing.B) {
	sizes := []int{25_000, 100_000, 1_000_000}
	if os.Getenv("PLAN_BENCH_1M_ONLY") != "" {
		sizes = sizes[2:]
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
				if _, _, err := history.LoadStates(cfg.Data, testNow); err != nil {
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
			freeAndResetPeak()
			var peak float64 // the highest of each plan's peak RSS
			cpu := cpuTime()
			var list, listCPU time.Duration // of a read of the list after each plan, off the clock
			var offCPU time.Duration        // of the results folded after each plan and the heaps given back, off the clock
			for b.Loop() {
				cfg.At = cfg.At.Add(time.Minute)
				if err := planMinute(context.Background(), cfg, io.Discard, discard()); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				peak = max(peak, peakRSS())
				c := cpuTime()
				before := cfg.At.Add(-time.Minute)
				checks, bad, err := spool.ReadPlan(cfg.Data, before)
				if err != nil || len(bad) > 0 {
					b.Fatal(err, bad)
				}
				mustFold(b, cfg.Data, "run-"+before.Format("1504"), resultsOf(checks, func(k int) bool { return k%20 == 0 }))
				freeAndResetPeak()
				offCPU += cpuTime() - c
				// The list is read as the plan read it: from a heap given
				// back to the system, as each minute's plan process starts.
				t, c := time.Now(), cpuTime()
				if _, _, err := lists.ReadServers(cfg.Servers); err != nil {
					b.Fatal(err)
				}
				list, listCPU = list+time.Since(t), listCPU+cpuTime()-c
				c = cpuTime()
				freeAndResetPeak()
				offCPU += cpuTime() - c
				b.StartTimer()
			}
			planCPU := cpuTime() - cpu - listCPU - offCPU
			b.ReportMetric(float64(planCPU.Milliseconds())/float64(b.N), "cpu-ms/op")
			// The goal, side by side in the same minutes: twice the list.
			b.ReportMetric(float64(b.Elapsed())/float64(list), "x-read-list")
			b.ReportMetric(float64(planCPU)/float64(listCPU), "x-read-list-cpu")
			if peak > 0 {
				b.ReportMetric(peak, "peak-RSS-MB")
			}
		})
	}
}
