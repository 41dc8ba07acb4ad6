// Command slowtests runs `go test -json` and prints what `go test` prints
// without -json (each package's closing line, and the output of the tests
// that fail), then the slowest tests of the run, and exits with the status
// of go test. CI runs `make test` through it, so its log says where the
// time went:
//
//	go run ./cmd/internal/slowtests -n 15 -- go test -race -json ./...
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run runs the command after the flags and returns the exit status to end
// with: the command's (1 when a signal ended it), or 2 when it cannot be
// started.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("slowtests", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("n", 15, "how many of the slowest tests to print")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: slowtests [-n 15] -- go test -json [flags] [packages]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		fmt.Fprintln(stderr, "slowtests: no command to run")
		return 2
	}
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "slowtests: %v\n", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "slowtests: run %s: %v\n", fs.Arg(0), err)
		return 2
	}
	var rep report
	rerr := rep.read(out, stdout)
	werr := cmd.Wait()
	rep.printSlowest(stdout, *n)
	if rerr != nil {
		fmt.Fprintf(stderr, "slowtests: %v\n", rerr)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ee) && ee.ExitCode() > 0:
		return ee.ExitCode()
	case errors.As(werr, &ee): // ended by a signal
		fmt.Fprintf(stderr, "slowtests: %v\n", werr)
		return 1
	case werr != nil:
		fmt.Fprintf(stderr, "slowtests: %v\n", werr)
		return 2
	case rerr != nil:
		return 1
	}
	return 0
}
