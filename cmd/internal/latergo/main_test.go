package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// goroot returns the toolchain's GOROOT, the one a copy was made from
// when the tests run with a copy (make later).
func goroot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	return sourceOf(strings.TrimSpace(string(out)))
}

// TestPatchNow: this Go's time.Now gains the offset once; a Now of
// another shape is refused, naming what was looked for, rather than
// patched somewhere else.
func TestPatchNow(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(goroot(t), "src", "time", "time.go"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := patchNow(src)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(got, []byte("sec += wallOffset")); n != 1 {
		t.Errorf("patched time.go adds the offset %d times, want 1", n)
	}
	if len(got) != len(src)+len("\tsec += wallOffset\n") {
		t.Errorf("patched time.go is %d bytes, want the %d of time.go and the one line", len(got), len(src))
	}
	other := bytes.Replace(src, []byte(nowLine), []byte("func Now() Time {\n\tsec, nsec, mono := now()\n"), 1)
	if _, err := patchNow(other); err == nil || !strings.Contains(err.Error(), "not the one latergo knows") {
		t.Errorf("a time.Now of another shape: err %v, want it refused", err)
	}
}

// TestCopyRunsAhead builds a program with the copy and runs it with and
// without an offset: its time.Now is the wall clock's, or that many
// seconds ahead. A second makeCopy keeps the copy.
func TestCopyRunsAhead(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the standard library with a copy of the toolchain")
	}
	dir := t.TempDir()
	copyDir := filepath.Join(dir, "go")
	if err := makeCopy(goroot(t), copyDir); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "now.go")
	if err := os.WriteFile(prog, []byte("package main\n\nimport (\n\t\"os\"\n\t\"strconv\"\n\t\"time\"\n)\n\nfunc main() { os.Stdout.WriteString(strconv.FormatInt(time.Now().Unix(), 10)) }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "now")
	build := exec.Command(filepath.Join(copyDir, "bin", "go"), "build", "-o", bin, prog)
	build.Env = append(os.Environ(), "GOROOT="+copyDir, "GOFLAGS=", "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build with the copy: %v\n%s", err, out)
	}
	// Each run is held to a first one without an offset, which reads the
	// wall clock itself (this test's own clock runs ahead under make later).
	now := func(offset string) int64 {
		t.Helper()
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "GO_WALL_CLOCK_OFFSET="+offset)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("run with offset %q: %v", offset, err)
		}
		n, err := strconv.ParseInt(string(out), 10, 64)
		if err != nil {
			t.Fatalf("run with offset %q printed %q", offset, out)
		}
		return n
	}
	start := time.Now()
	wall := now("")
	const fiveYears = 5 * 365 * 24 * 3600
	for _, c := range []struct {
		env   string
		ahead int64
	}{{strconv.Itoa(fiveYears), fiveYears}, {"-3600", -3600}, {"5y", 0}, {"", 0}} {
		got := now(c.env) - wall
		if slack := int64(time.Since(start).Seconds()) + 1; got < c.ahead || got > c.ahead+slack {
			t.Errorf("offset %q: time.Now %d s from the wall clock's, want %d (up to %d s later)", c.env, got, c.ahead, slack)
		}
	}

	kept := filepath.Join(copyDir, "kept")
	if err := os.WriteFile(kept, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := makeCopy(goroot(t), copyDir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("a second makeCopy made the copy again: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(goroot(t), "src", "time", "time.go")); err != nil || bytes.Contains(b, []byte("wallOffset")) {
		t.Errorf("GOROOT's own time.go was changed (err %v)", err)
	}

	// A copy of the copy (latergo run by the copy's go, as make later
	// runs these tests) is made from the toolchain itself, and writes
	// nothing into the copy through the links.
	stamp, err := os.ReadFile(filepath.Join(copyDir, stampName))
	if err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(dir, "again")
	if err := makeCopy(copyDir, again); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(copyDir, stampName)); err != nil || !bytes.Equal(b, stamp) {
		t.Errorf("a copy of the copy changed its stamp: %q, was %q (err %v)", b, stamp, err)
	}
	if b, err := os.ReadFile(filepath.Join(again, "src", "time", "time.go")); err != nil || bytes.Count(b, []byte("sec += wallOffset")) != 1 {
		t.Errorf("a copy of the copy adds the offset %d times, want once (err %v)", bytes.Count(b, []byte("sec += wallOffset")), err)
	}
}
