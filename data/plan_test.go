package data

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestReadPlanDamage injects damage into a plan file: a line over
// MaxPlanLine (a ~1.2 MB address), one that does not parse, a flipped
// bit and a cut last line are each named file:line and left out, and every
// other check of the minute is still read (issue 10 point 4, issue 12).
func TestReadPlanDamage(t *testing.T) {
	t.Parallel()
	minute := t0.Add(time.Hour)
	checks := func() []PlannedCheck {
		var cs []PlannedCheck
		for i := range 4 {
			id := fmt.Sprintf("s%05d", 500+i)
			cs = append(cs, PlannedCheck{At: minute.Add(time.Duration(i) * time.Second), ID: id, URL: "https://" + id + ".example/mcp",
				Host: id + ".example", Reason: ReasonRoutine, Due: minute, Rank: 1 + i})
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
		}, "[s00500 s00502 s00503]", ":2: " + errLineChecksum.Error()},
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
			path := PlanPath(dir, minute)
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
	c := PlannedCheck{At: t0, Due: t0, ID: "s00500", URL: "https://s00500.example/mcp", Host: "s00500.example", Reason: ReasonRoutine, Rank: 500}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	line := appendLineCRC(b)
	for i := range len(line) - 1 {
		for bit := range 8 {
			row := bytes.Clone(line[:len(line)-1])
			row[i] ^= 1 << bit
			var got PlannedCheck
			if checkLineCRC(row) == nil && json.Unmarshal(row, &got) == nil && !reflect.DeepEqual(got, c) {
				t.Fatalf("flip of bit %d of byte %d (%q) read as %+v", bit, i, line[i], got)
			}
		}
	}
}

// TestRandomByteFlips flips one random byte of a journal and of a plan to a
// random value, 3,000 times each: every result or check read back is one of
// those written, exactly; the damaged line is named instead (issue 12).
func TestRandomByteFlips(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(12, 8))
	flips := 1000
	if testing.Short() {
		flips = 100
	}
	dir := t.TempDir()
	var rs []Result
	var cs []PlannedCheck
	for i := range 3 {
		id := fmt.Sprintf("s%05d", 500+i)
		r := result(id, t0.Add(time.Duration(i)*time.Second), Working)
		r.ServerName, r.Detail = "demo", "2 tools"
		rs = append(rs, r)
		cs = append(cs, PlannedCheck{At: t0.Add(time.Duration(i) * time.Second), Due: t0, ID: id, URL: r.URL, Host: r.Host, Reason: ReasonRoutine, Rank: i + 1})
	}
	j := MustJournal(t, dir, "run-flips", rs...)
	j.Close()
	if err := WritePlan(dir, t0, cs); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"journal", "plan"} {
		path := j.Path()
		if kind == "plan" {
			path = PlanPath(dir, t0)
		}
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{}
		if kind == "journal" {
			got, _, _ := ReadJournal(path)
			for _, r := range got {
				want[r.ID] = fmt.Sprintf("%+v", r)
			}
		} else {
			got, _, _ := ReadPlan(dir, t0)
			for _, c := range got {
				want[c.ID] = fmt.Sprintf("%+v", c)
			}
		}
		for range flips {
			b := bytes.Clone(orig)
			i := rng.IntN(len(b))
			b[i] ^= byte(1 + rng.IntN(255))
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			var read []string
			var ids []string
			var bad []error
			if kind == "journal" {
				got, bd, _ := ReadJournal(path)
				for _, r := range got {
					read, ids = append(read, fmt.Sprintf("%+v", r)), append(ids, r.ID)
				}
				bad = bd
			} else {
				got, bd, _ := ReadPlan(dir, t0)
				for _, c := range got {
					read, ids = append(read, fmt.Sprintf("%+v", c)), append(ids, c.ID)
				}
				bad = bd
			}
			for k, s := range read {
				if want[ids[k]] != s {
					t.Fatalf("%s: byte %d flipped: read %s, never written", kind, i, s)
				}
			}
			if len(read)+len(bad) < 2 {
				t.Fatalf("%s: byte %d flipped: %d read and %d named, want every line either", kind, i, len(read), len(bad))
			}
		}
		os.WriteFile(path, orig, 0o644)
	}
}
