package main

import (
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
	"time"
)

// stopGrace is how long a command has to stop after an interrupt before it
// is killed.
const stopGrace = 5 * time.Second

// pipeline runs the built commands (plan, run, publish) from one
// directory, as cron would, with their output shown line by line under
// their name.
type pipeline struct {
	bin string    // directory of the built commands
	out io.Writer // where their output goes, prefixed
}

// check reports a command missing from the bin directory, naming how to
// build it.
func (p pipeline) check(names ...string) error {
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(p.bin, n)); err != nil {
			return fmt.Errorf("find command %s in %s (run `make build` first): %w", n, p.bin, err)
		}
	}
	return nil
}

// step runs bin/name with args and waits for it. When ctx ends (Ctrl-C) the
// command gets an interrupt, as from a terminal, and is killed if it has
// not stopped after stopGrace. A command that exits non-zero is an error
// naming it.
func (p pipeline) step(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(p.bin, name), args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = stopGrace
	w := &lineWriter{out: p.out, prefix: name + ": "}
	cmd.Stdout, cmd.Stderr = w, w
	fmt.Fprintf(p.out, "$ %s %s\n", filepath.Join(p.bin, name), strings.Join(args, " "))
	err := cmd.Run()
	w.flush()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s stopped: %w", name, context.Cause(ctx))
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("%s exited with status %d", name, ee.ExitCode())
		}
		return fmt.Errorf("run %s: %w", name, err)
	}
	return nil
}

// lineWriter writes whole lines to out, each after prefix; stdout and
// stderr of one command share it.
type lineWriter struct {
	out    io.Writer
	prefix string

	mu  sync.Mutex
	buf []byte
}

// Write buffers p and writes every complete line.
func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if _, err := fmt.Fprintf(w.out, "  %s%s\n", w.prefix, w.buf[:i]); err != nil {
			return 0, err
		}
		w.buf = w.buf[i+1:]
	}
}

// flush writes what is left of a last line without a newline.
func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		fmt.Fprintf(w.out, "  %s%s\n", w.prefix, w.buf)
		w.buf = nil
	}
}
