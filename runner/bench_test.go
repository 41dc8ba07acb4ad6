package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/testutil"
)

// farmChild serves a lab farm of RUNNER_TEST_HOSTS servers, prints it as
// JSON on stdout and serves until its stdin closes, so a benchmark measures
// the runner's CPU and memory without the servers'.
func farmChild() error {
	farm, stop, err := childFarm()
	if err != nil {
		return err
	}
	defer stop()
	if err := json.NewEncoder(os.Stdout).Encode(farm); err != nil {
		return err
	}
	var b [1]byte
	os.Stdin.Read(b[:]) // until the parent closes it or dies
	return nil
}

// MustFarmProcess starts a farm of n servers in a child process.
func MustFarmProcess(tb testing.TB, n int) *labFarm {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(testutil.ChildEnv(tb), childMode+"=farm", childHosts+"="+strconv.Itoa(n))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { stdin.Close(); cmd.Wait() })
	var f labFarm
	if err := json.NewDecoder(stdout).Decode(&f); err != nil {
		tb.Fatalf("read the farm child's servers: %v", err)
	}
	return &f
}

// offsetClock is the wall clock shifted, so a benchmark's minute begins
// now rather than at the next whole minute. Its time runs at real speed:
// lateness measured on it is real.
type offsetClock struct{ off time.Duration }

func (c offsetClock) Now() time.Time { return time.Now().Add(c.off) }
func (c offsetClock) Sleep(ctx context.Context, d time.Duration) error {
	return SystemClock{}.Sleep(ctx, d)
}

// cpuTime returns the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var benchChecks = flag.Int("checks", 1000, "BenchmarkMinute: checks in the minute, each on its own lab server")

// BenchmarkMinute runs one real minute's plan of 1,000 checks against
// 1,000 lab servers (each its own host on its own 127.a.b.c:8443, served
// by a child process), about 17 checks starting each second, and then the
// same 1,000 checks one by one, as the baseline. Run it with
// -benchtime=1x: one iteration takes a real minute.
func BenchmarkMinute(b *testing.B) {
	n := *benchChecks
	farm := MustFarmProcess(b, n)
	for b.Loop() {
		dir := b.TempDir()
		wall := time.Now()
		// The minute begins 200 ms from now on the benchmark's clock.
		minute := wall.UTC().Truncate(time.Minute).Add(time.Minute)
		clock := offsetClock{off: minute.Sub(wall) - 200*time.Millisecond}
		var checks []data.PlannedCheck
		for i := range n {
			id := fmt.Sprintf("s%04d", i)
			checks = append(checks, data.PlannedCheck{At: minute.Add(time.Duration(i%60) * time.Second),
				ID: id, URL: farm.URL(i, id), Host: farm.Hosts[i], Reason: data.ReasonRoutine})
		}
		MustPlan(b, dir, minute, checks...)
		checker := MustLabChecker(b, farm, clock)

		stop := make(chan struct{})
		peak := testutil.SamplePeak("/memory/classes/total:bytes", stop)
		cpu0 := cpuTime()
		sum, err := Run(context.Background(), Config{Dir: dir, Checker: checker, Clock: clock, Logger: slog.New(slog.DiscardHandler)}, minute)
		cpuRun := cpuTime() - cpu0
		close(stop)
		if err != nil {
			b.Fatal(err)
		}
		if sum.Completed != n {
			b.Fatalf("completed %d of %d", sum.Completed, n)
		}
		rs := MustHistory(b, dir)
		working := 0
		var late []time.Duration
		worst := map[time.Time]time.Duration{} // per planned second
		for _, r := range rs {
			if r.Status == data.Working {
				working++
			}
			late = append(late, r.Lateness)
			worst[r.Planned] = max(worst[r.Planned], r.Lateness)
		}
		slices.Sort(late)
		seconds := slices.Collect(maps.Keys(worst))
		slices.SortFunc(seconds, func(x, y time.Time) int { return cmp.Compare(worst[y], worst[x]) })
		for _, s := range seconds[:min(3, len(seconds))] {
			b.Logf("second :%02d: worst lateness %v", s.Second(), worst[s])
		}

		// Baseline: the same checks one by one, no schedule, no journal.
		cpu0, wall0 := cpuTime(), time.Now()
		for _, c := range checks {
			checker.Check(context.Background(), c)
		}
		cpuSeq, wallSeq := cpuTime()-cpu0, time.Since(wall0)

		b.Logf("iteration: p50 %v, p99 %v, max %v lateness; %.2f cpu-s per 1000 checks (one by one %.2f, %.1f s wall); peak %.0f MB",
			late[len(late)/2], sum.P99Lateness, sum.MaxLateness, cpuRun.Seconds()*1000/float64(n), cpuSeq.Seconds()*1000/float64(n),
			wallSeq.Seconds(), float64(peak.Load())/(1<<20))
		b.ReportMetric(float64(late[len(late)/2].Microseconds())/1000, "p50-late-ms")
		b.ReportMetric(float64(sum.P99Lateness.Microseconds())/1000, "p99-late-ms")
		b.ReportMetric(float64(sum.MaxLateness.Microseconds())/1000, "max-late-ms")
		b.ReportMetric(cpuRun.Seconds()*1000/float64(n), "cpu-s/1000checks")
		b.ReportMetric(cpuSeq.Seconds()*1000/float64(n), "seq-cpu-s/1000checks")
		b.ReportMetric(cpuRun.Seconds()/cpuSeq.Seconds(), "cpu-ratio-vs-seq")
		b.ReportMetric(wallSeq.Seconds(), "seq-wall-s")
		b.ReportMetric(float64(peak.Load())/(1<<20), "peak-go-MB")
		b.ReportMetric(float64(working), "working")
	}
}
