package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"plug.directory/prober/internal/testutil"
)

// TestRun: a recorded `make bench` run (runner/fleet's and site's
// benchmarks, a line of site's split over two events) prints as go test
// prints without -json, then the ratios: BenchmarkStart over
// BenchmarkStartBaseline, the publishes over BenchmarkBaselineIndexRewrite,
// each "x-" metric (testdata/bench.golden; -update rewrites it). The exit
// status is go test's, after the table all the same.
func TestRun(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"--", "/bin/sh", "-c", "cat " + filepath.Join("testdata", "bench.jsonl") + "; exit 3"}, &stdout, &stderr)
	if code != 3 || stderr.Len() != 0 {
		t.Errorf("exit %d, stderr %q; want go test's 3, nothing", code, stderr.String())
	}
	testutil.Golden(t, filepath.Join("testdata", "bench.golden"), stdout.Bytes())
	if code := run(nil, &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), "no command to run") {
		t.Errorf("no command: exit %d, stderr %q; want 2 and why", code, stderr.String())
	}
}

// TestRatios: each pair's ratio is the benchmark's figure over its
// baseline's, a sub-benchmark over the baseline's sub-benchmark of its
// name or else the baseline itself, and the "x-" and "-x-" metrics a
// benchmark reports as they are; a pair whose baseline did not run, a
// metric that is not a ratio and a line that is not a result give no row.
func TestRatios(t *testing.T) {
	pkg := "plug.directory/prober/runner/check"
	lines := []string{
		"BenchmarkCheck/v1-2   \t       1\t  3000 ns/op\t  400 B/op",
		"BenchmarkBaselineSDK/v1-2   \t       1\t  1000 ns/op\t  100 B/op",
		"BenchmarkCheck/v2-2   \t       1\t  5000 ns/op",
		"BenchmarkBaselineSDK/v2-2   \t       1\t  0 ns/op",
		"BenchmarkCheck/v3-2   \t       1\t  9000 ns/op\t 2.5 x-other\t 1.5 floor-x-other\t 7 box-other",
		"BenchmarkCheck/v1",
		"BenchmarkCheckv4-2   \t       1\t  9000 ns/op",
		"ok  \tplug.directory/prober/runner/check\t1.0s",
	}
	var rs results
	var in strings.Builder
	for _, l := range lines {
		in.WriteString(`{"Action":"output","Package":"` + pkg + `","Output":"` + strings.ReplaceAll(l, "\t", `\t`) + `\n"}` + "\n")
	}
	if err := rs.read(strings.NewReader(in.String()), &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	got := rs.ratios()
	want := []ratio{
		{pkg, "BenchmarkCheck/v1", "BenchmarkBaselineSDK/v1", "ns/op", 3},
		{pkg, "BenchmarkCheck/v1", "BenchmarkBaselineSDK/v1", "B/op", 4},
		{pkg, "BenchmarkCheck/v3", "its own baseline", "floor-x-other", 1.5},
		{pkg, "BenchmarkCheck/v3", "its own baseline", "x-other", 2.5},
	}
	if len(got) != len(want) {
		t.Fatalf("ratios %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("ratio %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
