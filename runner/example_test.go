package runner_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/runner"
)

// A minute planned in the past runs at once, late; a second run of the
// same minute refuses.
func ExampleRun() {
	dir, _ := os.MkdirTemp("", "example-run-")
	defer os.RemoveAll(dir)
	minute := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	spool.WritePlan(dir, minute, []data.PlannedCheck{
		{At: minute, ID: "docs", URL: "https://docs.example/mcp", Host: "docs.example", Reason: data.ReasonRoutine},
		{At: minute.Add(time.Second), ID: "wiki", URL: "https://wiki.example/mcp", Host: "wiki.example", Reason: data.ReasonNew},
	})
	checker := runner.CheckerFunc(func(ctx context.Context, c data.PlannedCheck) data.Result {
		return data.Result{Status: data.Working, ToolCount: 1, Tools: []string{"search"}}
	})
	cfg := runner.Config{Dir: dir, Checker: checker}
	sum, err := runner.Run(context.Background(), cfg, minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("completed:", sum.Completed, "working:", sum.Outcomes[data.Working], "late:", sum.MaxLateness > 0)

	_, err = runner.Run(context.Background(), cfg, minute)
	fmt.Println("second run refused:", errors.Is(err, runner.ErrMinuteTaken))
	// Output:
	// completed: 2 working: 2 late: true
	// second run refused: true
}
