package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The commands of the pipeline, built once from this source tree for every
// test, as `make build` builds them into bin/.
var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// buildCommands returns the directory of the five commands built from this
// tree.
func buildCommands(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build the pipeline's commands with")
	}
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "demo-bin-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir+string(filepath.Separator), "./cmd/plan", "./cmd/run", "./cmd/publish", "./cmd/pause", "./cmd/demo")
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build the commands: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// syncBuffer is an output buffer the commands' output goroutines share,
// which signals when a text appears.
type syncBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	text   string
	seen   chan struct{}
	closed bool
}

func newSyncBuffer(text string) *syncBuffer {
	return &syncBuffer{text: text, seen: make(chan struct{})}
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	if !s.closed && s.text != "" && strings.Contains(s.b.String(), s.text) {
		close(s.seen)
		s.closed = true
	}
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestPrepareDir: the demo empties a directory it made before, and leaves
// alone one with files it did not make.
func TestPrepareDir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ps := pathsOf(filepath.Join(root, "demo-out"))
	if err := prepareDir(ps, io.Discard); err != nil {
		t.Fatalf("new directory: %v", err)
	}
	stale := filepath.Join(ps.data, "stale")
	if err := os.WriteFile(stale, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var said bytes.Buffer
	if err := prepareDir(ps, &said); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if want := "emptying " + ps.dir + ", made by an earlier demo run\n"; said.String() != want {
		t.Errorf("second run said %q, want %q", said.String(), want)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a file of the previous run is still there: %v", err)
	}

	foreign := pathsOf(root)
	if err := prepareDir(foreign, io.Discard); err == nil || !strings.Contains(err.Error(), "did not make") {
		t.Errorf("a directory with someone's files: error %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(ps.dir, markerName)); err != nil {
		t.Errorf("the demo directory lost its marker: %v", err)
	}
}

// TestServe starts the fleet alone (demo -serve), runs the one-off checks
// it prints, as docs/demo.md tells a server owner to, and stops it: each
// command reaches its server in the lab setting and exits as the checks
// page says (0 when the server answered, 1 when not).
func TestServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the commands and runs the fleet for up to a minute; make test runs it")
	}
	t.Parallel()
	bin := buildCommands(t)
	dir := filepath.Join(t.TempDir(), "demo-out")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := newSyncBuffer("")
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-serve", "-bin", bin, "-dir", dir}, out, out) }()

	runPath := filepath.Join(bin, "run")
	commands := map[string][]string{} // URL -> arguments
	deadline := time.Now().Add(10 * time.Second)
	for len(commands) < 12 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		sc := bufio.NewScanner(strings.NewReader(out.String()))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) > 2 && f[0] == runPath && f[len(f)-2] == "-url" {
				commands[f[len(f)-1]] = f[1:]
			}
		}
	}
	tests := []struct {
		url      string
		wantExit int
		want     string
	}{
		{"https://docs.demo.test:8443/mcp", 0, "working"},
		{"https://weather.demo.test:8443/sse", 0, "2024-11-05"},
		{"https://tools.demo.test:8443/calendar/mcp", 0, "2025-11-25"},
		{"https://crm.demo.test:8443/mcp", 0, "needs a key"},
		{"https://search.demo.test:8443/mcp", 1, "refused our check"},
		{"https://billing.demo.test:8443/mcp", 1, "HTTP 500"},
	}
	for _, tc := range tests {
		args, ok := commands[tc.url]
		if !ok {
			t.Fatalf("no one-off command printed for %s\n%s", tc.url, out)
		}
		if !strings.Contains(strings.Join(args, " "), "-timeout 10s") {
			t.Errorf("the command for %s has no -timeout 10s (the silent server would take 45 s): %q", tc.url, args)
		}
		cmd := exec.CommandContext(ctx, runPath, args...)
		got, err := cmd.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("run %s: %v", tc.url, err)
		}
		if code != tc.wantExit || !strings.Contains(string(got), tc.want) {
			t.Errorf("run -url %s: exit %d, want %d, and output holding %q:\n%s", tc.url, code, tc.wantExit, tc.want, got)
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve stopped with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the fleet did not stop on Ctrl-C")
	}
	if !strings.Contains(out.String(), "stopping the fleet") {
		t.Errorf("serve did not say it stopped\n%s", out)
	}
}
