package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit statuses of every command.
const (
	ExitOK      = 0 // success, or -h
	ExitFailure = 1 // the command could not do its work
	ExitUsage   = 2 // bad flags or arguments
)

// ExitError is an error that carries the process's exit status. A nil Err
// exits with Code silently: the output already said it all.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Exit returns an error that makes the command exit with code, printing err
// when it is not nil.
func Exit(code int, err error) error { return &ExitError{Code: code, Err: err} }

// Usage marks err as bad usage: exit status 2. A nil err exits 2 silently.
func Usage(err error) error { return Exit(ExitUsage, err) }

// errHelp is what Parse returns for -h: exit 0, nothing more to print.
var errHelp = Exit(ExitOK, nil)

// Parse parses args into fs, which must be made with flag.ContinueOnError.
// For -h or -help it prints fs's usage to stdout and returns an error that
// exits 0; for a bad flag the flag package's message and the usage go to
// stderr and the error exits 2; so does an argument that is not a flag
// (no command takes one). Afterwards fs writes to stderr.
func Parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	var out bytes.Buffer
	fs.SetOutput(&out)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		_, _ = stdout.Write(out.Bytes())
		return errHelp
	case err != nil:
		_, _ = stderr.Write(out.Bytes())
		return Usage(nil)
	case fs.NArg() > 0:
		return Usage(fmt.Errorf("unexpected argument %q (every option is a flag: -h lists them)", fs.Arg(0)))
	}
	return nil
}

// ExitCode prints err after the command's name (when it has something to
// say) and returns the exit status it carries: 0 for nil, 1 for an error
// that carries none.
func ExitCode(name string, err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, ee.Err)
		}
		return ee.Code
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	return ExitFailure
}

// Main runs a command: run gets a context that ends on SIGINT or SIGTERM,
// the arguments after the command's name and the standard streams; the
// process then exits with ExitCode.
func Main(name string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(ExitCode(name, err, os.Stderr))
}
