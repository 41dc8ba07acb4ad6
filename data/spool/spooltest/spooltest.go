// Package spooltest holds the fixtures of data/spool shared by the tests of
// the packages that read journals (MustJournal). Only tests import it;
// spool's own tests, which cannot import it (it imports spool), use it from
// the external test package spool_test.
package spooltest

import (
	"testing"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
)

// MustJournal creates a journal with the given results appended.
func MustJournal(tb testing.TB, dir, name string, rs ...data.Result) *spool.Journal {
	tb.Helper()
	j, err := spool.CreateJournal(dir, name)
	if err != nil {
		tb.Fatal(err)
	}
	for _, r := range rs {
		if err := j.Append(r); err != nil {
			tb.Fatal(err)
		}
	}
	return j
}
