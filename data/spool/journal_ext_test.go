package spool_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/datatest"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/data/spool/spooltest"
	"plug.directory/prober/internal/durable"
)

// TestJournalGroupCommit: appends from many goroutines at once all land,
// each as one whole line, and share fsyncs.
func TestJournalGroupCommit(t *testing.T) {
	t.Parallel()
	j := spooltest.MustJournal(t, t.TempDir(), "run-many")
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			for i := range 50 {
				if err := j.Append(datatest.NewResult(fmt.Sprintf("g%02d-%02d", g, i), datatest.T0.Add(time.Duration(i)*time.Second), data.Working)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	batches := j.Synced()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	rs, bad, err := spool.ReadJournal(j.Path())
	if err != nil || len(bad) > 0 {
		t.Fatalf("read journal: %v %v", err, bad)
	}
	seen := map[string]bool{}
	for _, r := range rs {
		seen[r.ID+r.Started.String()] = true
	}
	if len(rs) != 3200 || len(seen) != 3200 {
		t.Errorf("journal has %d lines, %d distinct, want 3200", len(rs), len(seen))
	}
	if batches >= 3200 {
		t.Errorf("%d fsyncs for 3200 concurrent appends: no group commit", batches)
	}
	t.Logf("3200 appends in %d fsyncs", batches)
}

// TestJournalBrokenStaysBroken: after a failed write, Append fails, never
// reporting durable a line that is not.
func TestJournalBrokenStaysBroken(t *testing.T) {
	t.Parallel()
	j := spooltest.MustJournal(t, t.TempDir(), "run-broken", datatest.NewResult("a", datatest.T0, data.Working))
	j.SetFile(nil) // the disk goes away
	for i := range 2 {
		if err := j.Append(datatest.NewResult(fmt.Sprintf("b%d", i), datatest.T0, data.Working)); err == nil {
			t.Errorf("append %d to a broken journal returned nil", i)
		}
	}
	if rs, _, _ := spool.ReadJournal(j.Path()); len(rs) != 1 {
		t.Errorf("journal has %d results, want the 1 written before", len(rs))
	}
}

// TestJournalDamage injects the damage a journal meets on disk and holds
// spool.ReadJournal to it: every whole result that is intact is read, each
// damaged line is named file:line and never read as another result.
func TestJournalDamage(t *testing.T) {
	t.Parallel()
	ids := []string{"s00500", "s00501", "s00502"}
	journal := func(t *testing.T) (string, []byte) {
		var rs []data.Result
		for _, id := range ids {
			rs = append(rs, datatest.NewResult(id, datatest.T0, data.Working))
		}
		j := spooltest.MustJournal(t, t.TempDir(), "run-damage", rs...)
		j.Close()
		b, err := os.ReadFile(j.Path())
		if err != nil {
			t.Fatal(err)
		}
		return j.Path(), b
	}
	lineStart := func(b []byte, n int) int { // offset of line n (1-based)
		off := 0
		for range n - 1 {
			off += bytes.IndexByte(b[off:], '\n') + 1
		}
		return off
	}
	cases := []struct {
		name    string
		damage  func(b []byte) []byte
		want    []string // ids read
		badLine string   // the error, after the path; "" for none
	}{
		{"flipped_bit_in_the_id", func(b []byte) []byte {
			i := lineStart(b, 2) + bytes.Index(b[lineStart(b, 2):], []byte("s00501")) + 3
			b[i] ^= 0x01 // s00501 -> s01501, a real server's id
			return b
		}, []string{"s00500", "s00502"}, ":2: " + durable.ErrLineChecksum.Error()},
		{"flipped_bit_in_the_checksum", func(b []byte) []byte {
			i := lineStart(b, 3) - 4
			b[i] ^= 0x01
			return b
		}, []string{"s00500", "s00502"}, ":2: " + durable.ErrLineChecksum.Error()},
		{"newline_lost_after_a_whole_last_line", func(b []byte) []byte { return b[:len(b)-1] },
			ids, ""},
		{"cut_mid_line", func(b []byte) []byte { return b[:lineStart(b, 3)+40] },
			[]string{"s00500", "s00501"}, ":3: last line cut short: unexpected end of JSON input"},
		{"over_long_line", func(b []byte) []byte {
			long := append([]byte(`{"id":"`), bytes.Repeat([]byte("x"), spool.MaxJournalLine)...)
			return append(append(b[:lineStart(b, 2):lineStart(b, 2)], append(long, '\n')...), b[lineStart(b, 2):]...)
		}, append([]string{"s00500"}, ids[1:]...), fmt.Sprintf(":2: line of %d bytes, over the %d a line may take", spool.MaxJournalLine+7, spool.MaxJournalLine)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, b := journal(t)
			if err := os.WriteFile(path, c.damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
			rs, bad, err := spool.ReadJournal(path)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rs {
				got = append(got, r.ID)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("read %v, want %v", got, c.want)
			}
			var msgs []string
			for _, e := range bad {
				msgs = append(msgs, e.Error())
			}
			want := []string{}
			if c.badLine != "" {
				want = []string{path + c.badLine}
			}
			if fmt.Sprint(msgs) != fmt.Sprint(want) {
				t.Errorf("bad = %q, want %q", msgs, want)
			}
		})
	}
}

// TestJournalDiskFull writes to a journal whose disk is full (/dev/full
// answers every write with ENOSPC): the error names the journal, not the
// temporary name it was created under.
func TestJournalDiskFull(t *testing.T) {
	t.Parallel()
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full:", err)
	}
	j := spooltest.MustJournal(t, t.TempDir(), "run-full")
	j.SetFile(full)
	err = j.Append(datatest.NewResult("a", datatest.T0, data.Working))
	if err == nil || !strings.Contains(err.Error(), "write "+j.Path()+": no space left on device") ||
		strings.Contains(err.Error(), ".new") || strings.Contains(err.Error(), "/dev/full") {
		t.Errorf("append on a full disk: %v, want it to name %s", err, j.Path())
	}
	j.Close()
}

// TestRandomByteFlips flips one random byte of a journal and of a plan to a
// random value, 3,000 times each: every result or check read back is one of
// those written, exactly; the damaged line is named instead.
func TestRandomByteFlips(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(12, 8))
	flips := 1000
	if testing.Short() {
		flips = 100
	}
	dir := t.TempDir()
	var rs []data.Result
	var cs []data.PlannedCheck
	for i := range 3 {
		id := fmt.Sprintf("s%05d", 500+i)
		r := datatest.NewResult(id, datatest.T0.Add(time.Duration(i)*time.Second), data.Working)
		r.ServerName, r.Detail = "demo", "2 tools"
		rs = append(rs, r)
		cs = append(cs, data.PlannedCheck{At: datatest.T0.Add(time.Duration(i) * time.Second), Due: datatest.T0, ID: id, URL: r.URL, Host: r.Host, Reason: data.ReasonRoutine, Rank: i + 1})
	}
	j := spooltest.MustJournal(t, dir, "run-flips", rs...)
	j.Close()
	if err := spool.WritePlan(dir, datatest.T0, cs); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"journal", "plan"} {
		path := j.Path()
		if kind == "plan" {
			path = data.Dir(dir).Plan(datatest.T0)
		}
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{}
		if kind == "journal" {
			got, _, _ := spool.ReadJournal(path)
			for _, r := range got {
				want[r.ID] = fmt.Sprintf("%+v", r)
			}
		} else {
			got, _, _ := spool.ReadPlan(dir, datatest.T0)
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
				got, bd, _ := spool.ReadJournal(path)
				for _, r := range got {
					read, ids = append(read, fmt.Sprintf("%+v", r)), append(ids, r.ID)
				}
				bad = bd
			} else {
				got, bd, _ := spool.ReadPlan(dir, datatest.T0)
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
