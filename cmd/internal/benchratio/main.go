// Command benchratio runs `go test -json` with benchmarks, prints what
// `go test` prints without -json, then a table of ratios measured in the
// same run: each benchmark over its baseline (baselines, in ratios.go),
// and the ratios the benchmarks report themselves (their metrics whose
// unit starts with "x-" or holds "-x-"). It exits with the status of go
// test. `make bench` runs through it:
//
//	go run ./cmd/internal/benchratio -- go test -run '^$' -bench . -benchtime 1x -json ./...
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
	var res results
	return gotestjson.Main(flag.NewFlagSet("benchratio", flag.ContinueOnError),
		"usage: benchratio -- go test -run '^$' -bench . -json [flags] [packages]", args, stderr,
		func(out io.Reader) error { return res.read(out, stdout) },
		func() { res.printRatios(stdout) })
}
