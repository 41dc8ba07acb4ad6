// Command run checks MCP servers, in one of three modes, each with its own
// flags and usage (run MODE -h):
//
//	run check https://host/mcp [-json] [-source ADDR] [-protocol V -transport T]
//	    [-timeout 45s] [-lab [-resolve host:port:addr]... [-ca-file FILE]]
//	run minute -data DIR [-at MINUTE] [-concurrency N] [-grace D] [-timeout D]
//	    [-source ADDR] [-metrics FILE] [-lab ...]
//	run loop -data DIR -servers FILE [-paused FILE] -out DIR
//	    [-publish-metrics FILE] [-first-check-soon] [the minute's flags but -at]
//
// check (oneoff.go) checks one server now, for server owners and
// operators, and prints the outcome, its reason and a transcript of every
// request; minute (minute.go) runs the planned checks of a minute; loop
// (loop.go) plans, runs and publishes every minute in the foreground.
// Without a mode's name the flags people already use pick it: -url is a
// check (run -url https://host/mcp), -loop the loop, anything else a
// minute (run -data DIR).
//
// Exit status: a check exits 0 when the server answered (working or needs
// a key), 1 when it did not; the other modes 0 or 1; 2 on bad usage; -h
// exits 0 (see cmd/internal/cli).
package main

import (
	"context"
	"io"
	"strings"

	"plug.directory/prober/cmd/internal/cli"
)

func main() { cli.Main("run", run) }

// mode is one way of running: its arguments after the mode's name.
type mode func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// modes are the modes by name.
var modes = map[string]mode{"check": runCheck, "minute": runMinuteMode, "loop": runLoop}

// run runs the mode the arguments name (pickMode).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	m, rest := pickMode(args)
	return m(ctx, rest, stdout, stderr)
}

// pickMode returns the mode named by the first argument and the arguments
// after it; without a name, the mode the flags people already use pick:
// -url a check, -loop the loop, else a minute.
func pickMode(args []string) (mode, []string) {
	if len(args) > 0 {
		if m, ok := modes[args[0]]; ok {
			return m, args[1:]
		}
	}
	switch {
	case cli.HasFlag(args, "url"):
		return runOneOff, args
	case cli.HasFlag(args, "loop"):
		return runLoop, args
	}
	return runMinuteMode, args
}

// runCheck is `run check`: the server's address may come first, without
// -url (run check https://host/mcp).
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		args = append([]string{"-url", args[0]}, args[1:]...)
	}
	return runOneOff(ctx, args, stdout, stderr)
}

// usageError marks err as bad usage (exit status 2).
func usageError(err error) error { return cli.Usage(err) }
