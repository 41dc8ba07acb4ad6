package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"plug.directory/prober/internal/testutil"
)

// TestReport: a run's events print as go test prints without -json (the
// build failure, each package's closing line, the output of the tests that
// failed and of the test a timeout stopped, nothing of those that passed
// or skipped), then the slowest top-level tests, slowest first; the exit
// status is go test's (1 when a signal ended it) (testdata/run.golden; -update rewrites it).
func TestReport(t *testing.T) {
	stream := filepath.Join("testdata", "run.jsonl")
	for _, tc := range []struct {
		name string
		exit string
		want int
	}{
		{"failed", "exit 1", 1},
		{"passed", "exit 0", 0},
		{"killed", "kill -9 $$", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run([]string{"-n", "3", "--", "/bin/sh", "-c", "cat " + stream + "; echo 'go test: on stderr' >&2; " + tc.exit}, &stdout, &stderr)
			if code != tc.want {
				t.Errorf("exit %d, want %d (go test's)", code, tc.want)
			}
			if !bytes.HasPrefix(stderr.Bytes(), []byte("go test: on stderr\n")) {
				t.Errorf("stderr %q, want go test's stderr as it is", stderr.String())
			}
			testutil.Golden(t, filepath.Join("testdata", "run.golden"), stdout.Bytes())
		})
	}
	var stderr bytes.Buffer
	if code := run([]string{"--", filepath.Join(t.TempDir(), "no-such-command")}, &bytes.Buffer{}, &stderr); code != 2 || stderr.Len() == 0 {
		t.Errorf("a command that cannot start: exit %d, stderr %q; want 2 and why", code, stderr.String())
	}
}
