package site

import (
	"encoding/json"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/site/record"
)

// TestIndexRowEncoding proves the hand-written encoder of index rows writes
// exactly what encoding/json writes for IndexRow, so index.json matches its
// schema and the rows of the preview.
func TestIndexRowEncoding(t *testing.T) {
	t.Parallel()
	ms := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	rows := []struct {
		id string
		r  row
	}{
		{"alpha", row{Rank: 1, status: statusIndex(data.Working), LastCheck: ms("2026-12-02T11:00:17Z"), Uptime7d: 9945, Tools: 2}},
		{"bravo", row{Rank: 2000, status: statusIndex(data.Failing), LastCheck: ms("2026-12-02T11:00:17.12Z"), Uptime7d: 10000, Tools: 0}},
		{"charlie", row{Rank: 3, status: statusIndex(data.Pending), Uptime7d: -1}},
		{"delta", row{Rank: 4, status: statusIndex(data.Refused), LastCheck: ms("2026-01-02T03:04:05.001Z"), Uptime7d: 0}},
		{"echo", row{Rank: 5, status: statusIndex(data.NeedsKey), LastCheck: ms("2026-01-02T03:04:05.5Z"), Uptime7d: 3333}},
		{"io.github.owner/name", row{Rank: 6, status: statusIndex(data.Paused), LastCheck: ms("1999-12-31T23:59:59.999Z"), Uptime7d: 9950}},
		{`quote"and\back<tag>&`, row{Rank: 7, status: statusIndex(data.NotCheckable), Uptime7d: 1}},
		{"ünïcode", row{Rank: 8, status: statusIndex(data.Working), Uptime7d: 10}},
	}
	for _, c := range rows {
		want, err := json.Marshal(c.r.indexRow(c.id))
		if err != nil {
			t.Fatal(err)
		}
		if got := appendIndexRow(nil, c.id, &c.r); string(got) != string(want) {
			t.Errorf("row %s:\n got %s\nwant %s", c.id, got, want)
		}
	}
}

// TestIndexPartEncoding: the hand-written encoder of the head's part lines
// writes what encoding/json writes for their IndexPart.
func TestIndexPartEncoding(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		op   indexPart
		last string
	}{
		{indexPart{First: "alpha", Rows: 64, Sum: 0x0123456789abcdef}, "io.github.owner/name"},
		{indexPart{First: `quote"and\back<tag>&`, Rows: 1, Sum: 0xfedcba9876543210}, "ünïcode"},
		{indexPart{First: "a", Rows: 1, Sum: 0}, "a"},
	} {
		want, err := json.Marshal(record.IndexPart{Path: partPath(c.op.Sum), First: c.op.First, Last: c.last, Rows: c.op.Rows, Hash: partName(c.op.Sum)})
		if err != nil {
			t.Fatal(err)
		}
		if got := appendIndexPart(nil, c.op, c.last); string(got) != string(want) {
			t.Errorf("part %s:\n got %s\nwant %s", c.op.First, got, want)
		}
	}
}
