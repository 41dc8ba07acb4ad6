package spool

import "os"

// Synced returns how many fsyncs the journal has done, for the test of its
// group commit.
func (j *Journal) Synced() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.synced
}

// SetFile closes the journal's file and writes to f instead (nil: a disk
// that went away), for the tests of a broken journal.
func (j *Journal) SetFile(f *os.File) {
	j.f.Close()
	if f != nil {
		j.f = f
	}
}
