// Package gotestjson runs `go test -json` for the commands that read its
// events (cmd/internal/slowtests, cmd/internal/benchratio).
package gotestjson

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
)

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
