package spool

import (
	"path/filepath"
	"strings"
	"time"
)

// RunJournalLayout is the time layout of the minute in a run's journal name,
// run-<minute>-<pid> (runner.JournalName).
const RunJournalLayout = "20060102T1504"

// LiveRuns returns the minutes (unix s) whose run is still going: a process
// holds the lock of a journal named for that minute. A run that was killed,
// or has finished, holds none, so its planned checks with no result are
// lost and owed again. A journal that cannot be probed is an error.
func LiveRuns(dir string) (map[int64]bool, error) {
	journals, err := ListJournals(dir, true)
	if err != nil {
		return nil, err
	}
	live := map[int64]bool{}
	for _, j := range journals {
		if !j.Active {
			continue
		}
		rest, ok := strings.CutPrefix(strings.TrimSuffix(filepath.Base(j.Path), ".jsonl"), "run-")
		if !ok {
			continue
		}
		stamp, _, _ := strings.Cut(rest, "-")
		if t, err := time.Parse(RunJournalLayout, stamp); err == nil {
			live[t.Unix()] = true
		}
	}
	return live, nil
}
