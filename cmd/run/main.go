// Command run checks MCP servers. Given -url it checks one server now (a
// one-off check, for server owners and operators) and prints the outcome,
// its reason and a transcript of every request:
//
//	run -url https://host/mcp [-json] [-source ADDR] [-protocol V -transport T]
//	    [-timeout 45s] [-lab [-resolve host:port:addr]... [-ca-file FILE]]
//
// Exit status: 0 when the server answered (working or needs a key), 1 when
// it did not, 2 on bad usage; -h exits 0 (see cmd/internal/cli).
//
// Without -url it runs the planned checks of a minute (see scheduled.go).
package main

import (
	"context"
	"io"
	"strings"

	"plug.directory/prober/cmd/internal/cli"
)

func main() { cli.Main("run", run) }

// run picks the mode: a one-off check when -url is given, else the minute's
// planned checks.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if hasFlag(args, "url") {
		return runOneOff(ctx, args, stdout, stderr)
	}
	return runScheduled(ctx, args, stdout, stderr)
}

// usageError marks err as bad usage (exit status 2).
func usageError(err error) error { return cli.Usage(err) }

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
