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
	"strings"
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
// exits 0; for a bad flag it prints the usage to stderr and returns the
// flag package's message as an error that exits 2, which the command
// prints last (ExitCode), so a log's last line says what was wrong; so for
// an argument that is not a flag (no command takes one). Afterwards fs
// writes to stderr.
func Parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	var out bytes.Buffer
	fs.SetOutput(&out)
	usage := fs.Usage
	fs.Usage = func() {} // printed below, for -h and for a bad flag alike
	err := fs.Parse(args)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		fs.SetOutput(stderr)
		return errHelp
	case err != nil:
		fs.SetOutput(stderr)
		fs.Usage()
		return Usage(err)
	case fs.NArg() > 0:
		fs.SetOutput(stderr)
		return Usage(fmt.Errorf("unexpected argument %q (every option is a flag: -h lists them)", fs.Arg(0)))
	}
	fs.SetOutput(stderr)
	return nil
}

// ExitCode prints err after the command's name (when it has something to
// say), on one line (the lines of errors joined are joined with "; ", so
// that a log's last line is the whole error), and returns the exit status
// it carries: 0 for nil, 1 for an error that carries none.
func ExitCode(name string, err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintf(stderr, "%s: %s\n", name, oneLine(ee.Err))
		}
		return ee.Code
	}
	fmt.Fprintf(stderr, "%s: %s\n", name, oneLine(err))
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

// oneLine returns err's message with its lines joined by "; ".
func oneLine(err error) string {
	return strings.Join(strings.FieldsFunc(err.Error(), func(r rune) bool { return r == '\n' }), "; ")
}
