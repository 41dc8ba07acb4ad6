package spool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/datatest"
	"plug.directory/prober/internal/durable"
)

// TestReadPlanDamage injects damage into a plan file: a line over
// MaxPlanLine (a ~1.2 MB address), one that does not parse, a flipped
// bit and a cut last line are each named file:line and left out, and every
// other check of the minute is still read.
func TestReadPlanDamage(t *testing.T) {
	t.Parallel()
	minute := datatest.T0.Add(time.Hour)
	checks := func() []data.PlannedCheck {
		var cs []data.PlannedCheck
		for i := range 4 {
			id := fmt.Sprintf("s%05d", 500+i)
			cs = append(cs, data.PlannedCheck{At: minute.Add(time.Duration(i) * time.Second), ID: id, URL: "https://" + id + ".example/mcp",
				Host: id + ".example", Reason: data.ReasonRoutine, Due: minute, Rank: 1 + i})
		}
		return cs
	}
	lineAt := func(b []byte, n int) int {
		off := 0
		for range n - 1 {
			off += bytes.IndexByte(b[off:], '\n') + 1
		}
		return off
	}
	long := `{"at":"2026-12-02T11:00:00Z","id":"huge","url":"https://a.example/` + strings.Repeat("a", MaxPlanLine+200_000) + `"}` + "\n"
	cases := []struct {
		name   string
		damage func(b []byte) []byte
		want   string // ids read
		bad    string // error after the path
	}{
		{"a_1.2MB_line", func(b []byte) []byte {
			return append(append(b[:lineAt(b, 2):lineAt(b, 2)], long...), b[lineAt(b, 2):]...)
		}, "[s00500 s00501 s00502 s00503]", fmt.Sprintf(":2: line of %d bytes, over the %d a line may take", len(long)-1, MaxPlanLine)},
		{"a_line_that_does_not_parse", func(b []byte) []byte {
			return append(append(b[:lineAt(b, 3):lineAt(b, 3)], "{not json}\n"...), b[lineAt(b, 3):]...)
		}, "[s00500 s00501 s00502 s00503]", ":3: invalid character 'n' looking for beginning of object key string"},
		{"a_flipped_bit_in_an_id", func(b []byte) []byte {
			b[lineAt(b, 2)+bytes.Index(b[lineAt(b, 2):], []byte("s00501"))+3] ^= 1
			return b
		}, "[s00500 s00502 s00503]", ":2: " + durable.ErrLineChecksum.Error()},
		{"a_cut_last_line", func(b []byte) []byte { return b[:lineAt(b, 4)+30] },
			"[s00500 s00501 s00502]", ":4: last line cut short: unexpected end of JSON input"},
		{"a_check_without_an_id", func(b []byte) []byte { return append(b, `{"at":"2026-12-02T11:00:00Z"}`+"\n"...) },
			"[s00500 s00501 s00502 s00503]", ":5: check without id or time"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := WritePlan(dir, minute, checks()); err != nil {
				t.Fatal(err)
			}
			path := data.Dir(dir).Plan(minute)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, c.damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
			got, bad, err := ReadPlan(dir, minute)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, g := range got {
				ids = append(ids, g.ID)
			}
			if fmt.Sprint(ids) != c.want {
				t.Errorf("read %v, want %s", ids, c.want)
			}
			if len(bad) != 1 || bad[0].Error() != path+c.bad {
				t.Errorf("bad = %v, want [%s%s]", bad, path, c.bad)
			}
		})
	}
	t.Run("round_trip", func(t *testing.T) {
		dir := t.TempDir()
		if err := WritePlan(dir, minute, checks()); err != nil {
			t.Fatal(err)
		}
		got, bad, err := ReadPlan(dir, minute)
		if err != nil || len(bad) > 0 || fmt.Sprint(got) != fmt.Sprint(checks()) {
			t.Errorf("ReadPlan = %v, %v, %v; want the checks written", got, bad, err)
		}
	})
}

// TestReadPlanEveryFlipCaught flips each bit of a plan line in turn: the
// check is either read back exactly as planned or named as bad, never read
// as a check of another server or at another time.
func TestReadPlanEveryFlipCaught(t *testing.T) {
	t.Parallel()
	c := data.PlannedCheck{At: datatest.T0, Due: datatest.T0, ID: "s00500", URL: "https://s00500.example/mcp", Host: "s00500.example", Reason: data.ReasonRoutine, Rank: 500}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	line := durable.AppendLineCRC(b)
	for i := range len(line) - 1 {
		for bit := range 8 {
			row := bytes.Clone(line[:len(line)-1])
			row[i] ^= 1 << bit
			var got data.PlannedCheck
			if durable.CheckLineCRC(row) == nil && json.Unmarshal(row, &got) == nil && !reflect.DeepEqual(got, c) {
				t.Fatalf("flip of bit %d of byte %d (%q) read as %+v", bit, i, line[i], got)
			}
		}
	}
}

// TestPlanLineShared: a check for MaxShared servers of the longest ids and
// addresses, every byte one JSON escapes to six, fits a plan line and reads
// back whole.
func TestPlanLineShared(t *testing.T) {
	dir := t.TempDir()
	minute := datatest.T0.Add(time.Hour)
	long := func(n int) string { return strings.Repeat("<", n) }
	c := data.PlannedCheck{At: minute, ID: long(data.MaxIDBytes), URL: "https://a.example/" + long(data.MaxAddressBytes-18), Host: "a.example",
		Reason: data.ReasonRoutine, Due: minute, Rank: 1}
	for range MaxShared - 1 {
		c.Also = append(c.Also, data.Listing{ID: long(data.MaxIDBytes), URL: c.URL})
	}
	if err := WritePlan(dir, minute, []data.PlannedCheck{c}); err != nil {
		t.Fatal(err)
	}
	got, bad, err := ReadPlan(dir, minute)
	if err != nil || len(bad) > 0 || len(got) != 1 || len(got[0].Also) != MaxShared-1 {
		t.Fatalf("read back %d checks (bad %v, err %v), want the one with %d others", len(got), bad, err, MaxShared-1)
	}
	b, _ := json.Marshal(c)
	t.Logf("the line takes %d of %d bytes", len(b), MaxPlanLine)
}

// TestPrunePlans: WritePlan keeps the plans of PlanKeep before the minute
// it writes, across day directories, and removes the older ones, whole days
// and the first minutes of a day; the ledger beside them stays.
func TestPrunePlans(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := datatest.T0.Truncate(24 * time.Hour).Add(23 * time.Hour) // 23:00, so the minutes span four days
	var written []time.Time
	for m := start; m.Before(start.Add(PlanKeep + 3*time.Hour)); m = m.Add(37 * time.Minute) {
		written = append(written, m)
		if err := WritePlan(dir, m, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(data.Dir(dir).Ledger(), []byte("ledger"), 0o644); err != nil {
		t.Fatal(err)
	}
	last := written[len(written)-1]
	if err := WritePlan(dir, last, nil); err != nil {
		t.Fatal(err)
	}
	for _, m := range written {
		_, err := os.Stat(data.Dir(dir).Plan(m))
		if kept := !m.Before(last.Add(-PlanKeep)); kept != (err == nil) {
			t.Errorf("plan of %s: kept %v (%v), want kept %v", m, err == nil, err, kept)
		}
	}
	if _, err := os.Stat(data.Dir(dir).Ledger()); err != nil {
		t.Errorf("the ledger beside the plans: %v", err)
	}
	days, _ := data.Dir(dir).PlanDays()
	if len(days) != 3 {
		t.Errorf("plan days %v, want the 3 the last %s spans", days, PlanKeep)
	}
}
