package spool

import "plug.directory/prober/data"

// LiveRuns returns the minutes (unix s) whose run is still going: a process
// holds the lock of a journal named for that minute (data.RunJournal). A
// run that was killed, or has finished, holds none, so its planned checks
// with no result are lost and owed again. A journal that cannot be probed
// is an error.
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
		if t, run, ok := data.JournalMinute(j.Path); ok && run {
			live[t.Unix()] = true
		}
	}
	return live, nil
}
