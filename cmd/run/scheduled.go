package main

import (
	"context"
	"errors"
	"io"
)

// runScheduled runs the planned checks of a minute (run -data DIR [-at
// MINUTE], -loop). Not built yet: the runner replaces this file.
func runScheduled(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return usageError(errors.New("no -url given; minute runs are not built yet"))
}
