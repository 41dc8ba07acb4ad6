package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestStep: a command's output is shown line by line under its name, a
// failing command is an error naming it and its status, and a command
// missing from the bin directory says how to build it.
func TestStep(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("shell scripts stand in for the commands")
	}
	bin := t.TempDir()
	script := "#!/bin/sh\necho planned\necho \"warning: $1\" >&2\nprintf 'no newline'\nexit 3\n"
	if err := os.WriteFile(filepath.Join(bin, "plan"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	p := pipeline{bin: bin, out: &out}
	err := p.step(context.Background(), "plan", "late")
	if err == nil || err.Error() != "plan exited with status 3" {
		t.Errorf("error %v, want plan exited with status 3", err)
	}
	for _, want := range []string{"  plan: planned\n", "  plan: warning: late\n", "  plan: no newline\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err := p.check("plan", "publish"); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Errorf("missing publish: error %v, want one telling to run make build", err)
	}
}
