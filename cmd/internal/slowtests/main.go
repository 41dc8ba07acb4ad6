// Command slowtests runs `go test -json` and prints what `go test` prints
// without -json (each package's closing line, and the output of the tests
// that fail), then the slowest tests of the run, and exits with the status
// of go test. CI runs `make test` through it, so its log says where the
// time went:
//
//	go run ./cmd/internal/slowtests -n 15 -- go test -race -json ./...
package main

import (
	"flag"
	"io"
	"os"

	"plug.directory/prober/cmd/internal/gotestjson"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run runs the command after the flags and returns the exit status to end
// with: the command's (1 when a signal ended it), or 2 when it cannot be
// started.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("slowtests", flag.ContinueOnError)
	n := fs.Int("n", 15, "how many of the slowest tests to print")
	var rep report
	return gotestjson.Main(fs, "usage: slowtests [-n 15] -- go test -json [flags] [packages]", args, stderr,
		func(out io.Reader) error { return rep.read(out, stdout) },
		func() { rep.printSlowest(stdout, *n) })
}
