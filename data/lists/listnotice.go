package lists

import (
	"encoding/json"
	"hash/fnv"
	"os"
	"path/filepath"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// ListNoticeEvery is how often the same bad rows of the ranked list are
// logged again: plan and publish read the list every minute, and a row
// left as it is (a duplicate id) is news once a day, not twice a minute.
const ListNoticeEvery = 24 * time.Hour

// listNotice is the content of data.Dir.ListNotice.
type listNotice struct {
	Sum  uint64    `json:"sum"`  // FNV-64a of the lines logged
	Said time.Time `json:"said"` // when
}

// ListRowsToSay reports whether the bad rows of the ranked list and the
// line counting them (SummarizeRows) are to be logged at now by a reader of
// the data directory dir: when they differ from those last logged by any
// reader (plan or publish), or ListNoticeEvery after those were. It records
// them as logged when it returns true. Nothing is to be said of nothing;
// without a data directory (a simulation) or a record that can be read and
// written, they are always said.
func ListRowsToSay(dir string, bad []error, summary string, now time.Time) bool {
	if len(bad) == 0 && summary == "" {
		return false
	}
	if dir == "" {
		return true
	}
	h := fnv.New64a()
	for _, b := range bad {
		h.Write([]byte(b.Error()))
		h.Write([]byte{'\n'})
	}
	h.Write([]byte(summary))
	path := data.Dir(dir).ListNotice()
	var last listNotice
	if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &last) == nil &&
		last.Sum == h.Sum64() && now.Sub(last.Said) < ListNoticeEvery && !now.Before(last.Said) {
		return false
	}
	if b, err := json.Marshal(listNotice{Sum: h.Sum64(), Said: now.UTC()}); err == nil && os.MkdirAll(filepath.Dir(path), 0o755) == nil {
		_ = durable.WriteFileAtomic(path, append(b, '\n'), 0o644) // not written: said again next time, which is harmless
	}
	return true
}
