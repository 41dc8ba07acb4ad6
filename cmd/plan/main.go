// Command plan writes the plan of the next minute's checks (rules S1-S9),
// simulates a day of plans to prove the rules hold, generates a test list
// to simulate, or rebuilds the state; one mode a file, each with its own
// flags and usage (plan MODE -h):
//
//	plan -servers FILE -paused FILE -data DIR [-at TIME] [-first-check-soon]    (plan.go)
//	plan -servers FILE -paused github:OWNER/REPO/PATH[@REF] -data DIR [-github-api URL]
//	plan simulate 24h -servers FILE -data DIR [-failing 0.05] [-paused FILE] [-at TIME]   (simulate.go)
//	plan generate 100000 -out FILE [-big-host N] [-seed N]                       (generate.go)
//	plan rebuild-state -data DIR                                                  (rebuild.go)
//
// The flags that picked a mode before the modes had names pick it still:
// plan -simulate 24h ..., plan -generate 100000 ..., plan -rebuild-state ....
package main

import (
	"context"
	"io"
	"maps"
	"slices"
	"strings"

	"plug.directory/prober/cmd/internal/cli"
	"plug.directory/prober/planner"
)

func main() { cli.Main("plan", run) }

// mode is one way of running plan: its arguments after the mode's name.
type mode func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// modes are the modes other than planning a minute, by name; each name is
// also the flag that picked the mode before (-simulate 24h).
var modes = map[string]mode{"simulate": runSimulate, "generate": runGenerate, "rebuild-state": runRebuildState}

// run runs the mode the arguments pick: a mode's name first (its value, if
// it takes one, next: plan simulate 24h), or the mode's flag anywhere (plan
// -simulate 24h), else the plan of one minute.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		if m, ok := modes[args[0]]; ok {
			rest := args[1:]
			if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
				rest = append([]string{"-" + args[0], rest[0]}, rest[1:]...) // plan simulate 24h
			} else if args[0] == "rebuild-state" {
				rest = append([]string{"-rebuild-state"}, rest...)
			}
			return m(ctx, rest, stdout, stderr)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(modes)) {
		if cli.HasFlag(args, name) {
			return modes[name](ctx, args, stdout, stderr)
		}
	}
	return runPlanMinute(ctx, args, stdout, stderr)
}

// clock returns the planner's view of c's clock and minute: the one reading
// of Now (planner.Config.Time) and of the minute to plan or to start
// simulating from (planner.Config.NextMinute).
func (c Config) clock() planner.Config { return planner.Config{Minute: c.At, Now: c.Now} }
