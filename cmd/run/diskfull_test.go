package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/runner"
)

// TestDiskFullMessage: a run stopped by ENOSPC (as an injected writer
// returns it) names the directory whose filesystem is full, what was
// recorded and what is owed again, and what to free; other errors pass
// as they are.
func TestDiskFullMessage(t *testing.T) {
	t.Parallel()
	journal := filepath.Join("d", "journal", "run-20261202T1033-7.jsonl")
	err := fmt.Errorf("journal: %w", &fs.PathError{Op: "write", Path: journal, Err: syscall.ENOSPC})
	got := diskFull(err, "d", runner.Summary{Planned: 12, Completed: 3}).Error()
	for _, want := range []string{
		"write " + journal + ": no space left on device",
		"the filesystem holding " + filepath.Join("d", "journal") + " is full",
		"3 of the minute's 12 checks recorded; the other 9 are owed again: the next plan plans them at once",
		"free space on it (df -h " + filepath.Join("d", "journal") + ": the history " + filepath.Join("d", "results"),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("%s\nwant %q", got, want)
		}
	}
	fold := diskFull(err, "d", runner.Summary{Planned: 4, Completed: 4}).Error()
	if !strings.Contains(fold, "the minute's 4 checks are recorded in its journal, folded by the next run") || strings.Contains(fold, "owed again") {
		t.Errorf("every check recorded, the fold failed: %s", fold)
	}
	other := fmt.Errorf("journal: %w", os.ErrPermission)
	if diskFull(other, "d", runner.Summary{}) != other {
		t.Error("an error that is not ENOSPC was rewritten")
	}
}

// diskFullEnv names the data directory of TestDiskFull's child, the test
// binary run again in a mount namespace whose journal directory is a full
// tmpfs.
const diskFullEnv = "PROBER_TEST_DISKFULL_DATA"

// TestDiskFull runs a minute whose journal directory is a tmpfs with no
// room left (in a user and mount namespace of its own: unshare -rm, no
// root): the run stops at its first result with the remedy said, exit 1,
// and the minute, claimed, is not marked recorded (status.json).
func TestDiskFull(t *testing.T) {
	if dir := os.Getenv(diskFullEnv); dir != "" {
		diskFullChild(t, dir)
		return
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1): the full tmpfs is not tried (TestDiskFullMessage covers the message)")
	}
	dir := filepath.Join(t.TempDir(), "data")
	minute := time.Now().UTC().Truncate(time.Minute)
	var checks []data.PlannedCheck
	for i := range 3 { // no address: a result at once, no request
		checks = append(checks, data.PlannedCheck{At: minute, Due: minute, ID: fmt.Sprintf("s%d", i), Reason: data.ReasonRoutine, Rank: i + 1})
	}
	if err := spool.WritePlan(dir, minute, checks); err != nil {
		t.Fatal(err)
	}
	journal := data.Dir(dir).JournalDir()
	if err := os.MkdirAll(journal, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `mount -t tmpfs -o size=16k tmpfs "$1" || exit 97; head -c 65536 /dev/zero >"$1/filler" 2>/dev/null; exec "$2" -test.run '^TestDiskFull$' -test.v`
	cmd := exec.CommandContext(t.Context(), unshare, "-rm", "sh", "-c", script, "sh", journal, os.Args[0])
	cmd.Env = append(os.Environ(), diskFullEnv+"="+dir, "PROBER_TEST_DISKFULL_MINUTE="+minute.Format(time.RFC3339))
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok && (ee.ExitCode() == 97 || strings.Contains(string(out), "unshare failed")) || strings.Contains(string(out), "unshare: ") {
		t.Skipf("no mount namespace here (unshare -rm): %s", out)
	}
	if err != nil {
		t.Fatalf("the run on a full tmpfs: %v\n%s", err, out)
	}
	if last, err := spool.LastMinuteRun(dir); err != nil || !last.Equal(minute) {
		t.Errorf("last minute claimed %v, %v; want %v", last, err, minute)
	}
	if rec, err := spool.LastMinuteRecorded(dir); err != nil || !rec.IsZero() {
		t.Errorf("last minute recorded %v, %v; want none: the run recorded nothing", rec, err)
	}
}

// diskFullChild is TestDiskFull inside the namespace: it runs the minute
// and asserts what the operator reads.
func diskFullChild(t *testing.T, dir string) {
	minute := os.Getenv("PROBER_TEST_DISKFULL_MINUTE")
	code, stdout, stderr := runArgs(t, "-data", dir, "-at", minute)
	t.Logf("run: exit %d\n%s", code, stderr)
	journal := data.Dir(dir).JournalDir()
	for _, want := range []string{
		"no space left on device",
		"the filesystem holding " + journal + " is full",
		"0 of the minute's 3 checks recorded; the other 3 are owed again",
		"free space on it (df -h " + journal,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q\nwant %q", stderr, want)
		}
	}
	if code != 1 || stdout != "" {
		t.Errorf("exit %d, stdout %q; want 1 and no summary", code, stdout)
	}
}
