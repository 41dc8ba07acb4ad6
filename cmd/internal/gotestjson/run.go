// Package gotestjson runs `go test -json` and reads its events, for the
// commands that print a run's report (cmd/internal/slowtests,
// cmd/internal/benchratio).
package gotestjson

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
)

// Event is one line of `go test -json` (cmd/test2json).
type Event struct {
	Action     string
	Package    string
	ImportPath string // of build-output
	Test       string
	Elapsed    float64 // seconds
	Output     string
}

// Main parses args with fs (its name names the command in errors, usage
// its first line), runs the command after the flags as Run does and
// returns the exit status to end with: Run's, or 2 when the flags are
// wrong or name no command.
func Main(fs *flag.FlagSet, usage string, args []string, stderr io.Writer, read func(io.Reader) error, after func()) int {
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		fmt.Fprintf(stderr, "%s: no command to run\n", fs.Name())
		return 2
	}
	return Run(fs.Name(), fs.Args(), stderr, read, after)
}

// Run runs the command args, its standard error passed through, and hands
// its standard output to read; once the command has ended it calls after.
// It returns the exit status to end with: the command's (1 when a signal
// ended it, or when read failed), or 2 when it cannot be started. Errors
// are printed to stderr after name.
func Run(name string, args []string, stderr io.Writer, read func(io.Reader) error, after func()) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "%s: run %s: %v\n", name, args[0], err)
		return 2
	}
	rerr := read(out)
	werr := cmd.Wait()
	after()
	if rerr != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, rerr)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ee) && ee.ExitCode() > 0:
		return ee.ExitCode()
	case errors.As(werr, &ee): // ended by a signal
		fmt.Fprintf(stderr, "%s: %v\n", name, werr)
		return 1
	case werr != nil:
		fmt.Fprintf(stderr, "%s: %v\n", name, werr)
		return 2
	case rerr != nil:
		return 1
	}
	return 0
}

// Read reads events from r to its end and hands each to each; a line
// that is not an event is printed to w as it is. It fails only when r
// does.
func Read(r io.Reader, w io.Writer, each func(Event)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(w, sc.Text())
			continue
		}
		each(e)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read go test's output: %w", err)
	}
	return nil
}
