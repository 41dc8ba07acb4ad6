// Command run checks MCP servers. Given -url it checks one server now (a
// one-off check, for server owners and operators) and prints the outcome,
// its reason and a transcript of every request:
//
//	run -url https://host/mcp [-json] [-source ADDR] [-protocol V -transport T]
//	    [-timeout 45s] [-lab [-resolve host:port:addr]... [-ca-file FILE]]
//
// Exit status: 0 when the server answered (working or needs a key), 1 when
// it did not, 2 on bad usage.
//
// Without -url it runs the planned checks of a minute (see scheduled.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// run picks the mode: a one-off check when -url is given, else the minute's
// planned checks.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if hasFlag(args, "url") {
		return runOneOff(ctx, args, stdout, stderr)
	}
	return runScheduled(ctx, args, stdout, stderr)
}

// Exit codes of the command.
const (
	exitAnswered    = 0 // the server answered (one-off), or the run went well
	exitNotAnswered = 1 // the server did not answer, or the run failed
	exitUsage       = 2 // bad flags or arguments
)

// exitError is an error that carries the process's exit status. A nil err
// exits with code silently (the output already said it all).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError marks err as bad usage (exit status 2).
func usageError(err error) error { return &exitError{code: exitUsage, err: err} }

// exitCode prints err (when it has something to say) and returns the exit
// status it carries: 0 for nil, 1 for a plain error.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitAnswered
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "run:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "run:", err)
	return exitNotAnswered
}

// hasFlag reports whether args set the flag name (-name, --name, -name=v or
// --name=v), looking no further than a "--" that ends the flags.
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}
