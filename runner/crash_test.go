package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
	"plug.directory/prober/internal/testutil"
)

// childEnv names, for the test binary re-executed as a child process.
const (
	childMode   = "RUNNER_TEST_CHILD" // "crash": run one minute; "farm": serve lab servers
	childDir    = "RUNNER_TEST_DIR"
	childMinute = "RUNNER_TEST_MINUTE" // RFC 3339
	childHosts  = "RUNNER_TEST_HOSTS"  // lab servers to start
	childSpeed  = "RUNNER_TEST_SPEED"  // crash: how much faster than the wall its clock runs
)

func TestMain(m *testing.M) {
	var child func() error
	switch os.Getenv(childMode) {
	case "crash":
		child = crashChild
	case "farm":
		child = farmChild
	}
	if child != nil {
		if err := child(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashChild runs one real minute against its own lab servers on a clock
// childSpeed times faster, logging each completed check (after its journal
// line is fsynced) as JSON on stdout.
func crashChild() error {
	dir := os.Getenv(childDir)
	minute, err := time.Parse(time.RFC3339, os.Getenv(childMinute))
	if err != nil {
		return err
	}
	farm, stop, err := childFarm()
	if err != nil {
		return err
	}
	defer stop()
	speed, err := strconv.ParseFloat(os.Getenv(childSpeed), 64)
	if err != nil {
		return err
	}
	clock := newScaledClock(minute.Add(-200*time.Millisecond), speed)
	checker, err := NewChecker(checkConfig(farm, clock))
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, err = Run(context.Background(), Config{Dir: dir, Checker: checker, Clock: clock, Logger: logger}, minute)
	return err
}

// TestCrash kills a child process running a real minute with SIGKILL at
// random moments, several times: every check it reported complete (its
// journal line fsynced) is in the history exactly once after the next fold,
// and no check is there twice.
func TestCrash(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const hosts, perRun = 10, 40
	// Each run a real child process killed, its minute of 40 s on a clock
	// 40 times faster; -short kills 2 on one 120 times faster, make test 5.
	runs, speed := 5, 40
	if testing.Short() {
		runs, speed = 2, 120
	}
	// A killed child never removes its farm's directory: it must be in
	// the test's temporary directory, not left in the machine's.
	labDirs := func() []string {
		m, _ := filepath.Glob(filepath.Join(os.TempDir(), "lab-child-*"))
		return m
	}
	before := labDirs()
	completed := map[string]bool{}
	for i := range runs {
		m := minute0.Add(time.Duration(i) * time.Minute)
		var checks []data.PlannedCheck
		for c := range perRun {
			host := fmt.Sprintf("h%04d.lab.test", c%hosts)
			id := fmt.Sprintf("r%d-c%02d", i, c)
			checks = append(checks, data.PlannedCheck{At: m.Add(time.Duration(c) * time.Second),
				ID: id, URL: "https://" + host + ":8443/mcp/" + id, Host: host, Reason: data.ReasonRoutine})
		}
		MustPlan(t, dir, m, checks...)
		cmd, out := startCrashChild(t, exe, dir, m, hosts, speed)
		// Kill it at a random point of its progress, whatever the load of
		// the machine: after k checks reported complete (0: as soon as the
		// run has started; 40: all done, during its fold), plus up to 30 ms.
		k := mrand.IntN(perRun + 1)
		kill := time.Duration(mrand.IntN(30)) * time.Millisecond
		var timer *time.Timer
		arm := func() {
			if timer == nil {
				timer = time.AfterFunc(kill, func() { cmd.Process.Signal(syscall.SIGKILL) })
			}
		}
		n := 0
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var rec struct{ Msg, ID string }
			if json.Unmarshal(sc.Bytes(), &rec) != nil {
				continue
			}
			if rec.Msg == "check done" {
				completed[rec.ID] = true
				n++
			}
			if (rec.Msg == "run started" && k == 0) || (rec.Msg == "check done" && n == k) {
				arm()
			}
		}
		err = cmd.Wait()
		if timer != nil {
			timer.Stop()
		}
		t.Logf("run %d: killed %v after check %d: %d checks reported complete (%v)", i, kill, k, n, err)
	}
	if len(completed) == 0 {
		t.Fatal("no child completed any check: the test proves nothing")
	}
	for _, d := range labDirs() {
		if !slices.Contains(before, d) {
			t.Errorf("a killed child left %s in the machine's temporary directory", d)
		}
	}
	// The next run folds what the killed ones left.
	if _, err := history.Fold(dir, minute0, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	parts, err := filepath.Glob(filepath.Join(data.Dir(dir).Results(), "*", "*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, p := range parts {
		rs, err := history.ReadParquet(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			seen[r.ID]++
		}
	}
	for id := range completed {
		if seen[id] != 1 {
			t.Errorf("check %s completed, found %d times in the history, want exactly once", id, seen[id])
		}
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("check %s is %d times in the history", id, k)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(data.Dir(dir).JournalDir(), "*.jsonl")); len(left) != 0 {
		t.Errorf("journals left after the fold: %v", left)
	}
	t.Logf("%d checks reported complete, %d in the history", len(completed), len(seen))
}

// startCrashChild starts this test binary as a child run of minute m in
// dir against hosts lab hosts (childMode crash) on a clock speed times
// faster than the wall, for a test to kill by its PID; out is the child's
// JSON log.
func startCrashChild(t *testing.T, exe, dir string, m time.Time, hosts, speed int) (*exec.Cmd, io.ReadCloser) {
	t.Helper()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(testutil.ChildEnv(t), childMode+"=crash", childDir+"="+dir,
		childMinute+"="+m.Format(time.RFC3339), childHosts+"="+strconv.Itoa(hosts), childSpeed+"="+strconv.Itoa(speed))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}
