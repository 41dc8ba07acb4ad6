package spool

import (
	"bytes"
	"reflect"
	"testing"

	"plug.directory/prober/data"
	"plug.directory/prober/data/datatest"
)

// TestJournalEveryFlipCaught flips each bit of a journal line in turn: the
// line is either read back exactly as written or named as bad, never read
// as another result.
func TestJournalEveryFlipCaught(t *testing.T) {
	t.Parallel()
	r := datatest.NewResult("s00500", datatest.T0, data.Working)
	r.Detail, r.ServerName, r.Protocol = "2 tools", "demo", "2025-11-25"
	line, err := encodeJournalLine(r)
	if err != nil {
		t.Fatal(err)
	}
	want, err := decodeJournalLine(line[:len(line)-1])
	if err != nil {
		t.Fatal(err)
	}
	for i := range len(line) - 1 {
		for bit := range 8 {
			b := bytes.Clone(line[:len(line)-1])
			b[i] ^= 1 << bit
			got, err := decodeJournalLine(b)
			if err == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("flip of bit %d of byte %d (%q) read as %+v", bit, i, line[i], got)
			}
		}
	}
}
