package data

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestJournalGroupCommit: appends from many goroutines at once all land,
// each as one whole line, and share fsyncs.
func TestJournalGroupCommit(t *testing.T) {
	t.Parallel()
	j := MustJournal(t, t.TempDir(), "run-many")
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			for i := range 50 {
				if err := j.Append(result(fmt.Sprintf("g%02d-%02d", g, i), t0.Add(time.Duration(i)*time.Second), Working)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	j.mu.Lock()
	batches := j.synced
	j.mu.Unlock()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	rs, bad, err := ReadJournal(j.Path())
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
	j := MustJournal(t, t.TempDir(), "run-broken", result("a", t0, Working))
	j.f.Close() // the disk goes away
	for i := range 2 {
		if err := j.Append(result(fmt.Sprintf("b%d", i), t0, Working)); err == nil {
			t.Errorf("append %d to a broken journal returned nil", i)
		}
	}
	if rs, _, _ := ReadJournal(j.Path()); len(rs) != 1 {
		t.Errorf("journal has %d results, want the 1 written before", len(rs))
	}
}

// TestJournalDamage injects the damage a journal meets on disk and holds
// ReadJournal to it: every whole result that is intact is read, each
// damaged line is named file:line and never read as another result
// (issue 12 point 8).
func TestJournalDamage(t *testing.T) {
	t.Parallel()
	ids := []string{"s00500", "s00501", "s00502"}
	journal := func(t *testing.T) (string, []byte) {
		var rs []Result
		for _, id := range ids {
			rs = append(rs, result(id, t0, Working))
		}
		j := MustJournal(t, t.TempDir(), "run-damage", rs...)
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
		}, []string{"s00500", "s00502"}, ":2: " + errLineChecksum.Error()},
		{"flipped_bit_in_the_checksum", func(b []byte) []byte {
			i := lineStart(b, 3) - 4
			b[i] ^= 0x01
			return b
		}, []string{"s00500", "s00502"}, ":2: " + errLineChecksum.Error()},
		{"newline_lost_after_a_whole_last_line", func(b []byte) []byte { return b[:len(b)-1] },
			ids, ""},
		{"cut_mid_line", func(b []byte) []byte { return b[:lineStart(b, 3)+40] },
			[]string{"s00500", "s00501"}, ":3: last line cut short: unexpected end of JSON input"},
		{"over_long_line", func(b []byte) []byte {
			long := append([]byte(`{"id":"`), bytes.Repeat([]byte("x"), MaxJournalLine)...)
			return append(append(b[:lineStart(b, 2):lineStart(b, 2)], append(long, '\n')...), b[lineStart(b, 2):]...)
		}, append([]string{"s00500"}, ids[1:]...), fmt.Sprintf(":2: line of %d bytes, over the %d a line may take", MaxJournalLine+7, MaxJournalLine)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, b := journal(t)
			if err := os.WriteFile(path, c.damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
			rs, bad, err := ReadJournal(path)
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

// TestJournalEveryFlipCaught flips each bit of a journal line in turn: the
// line is either read back exactly as written or named as bad, never read
// as another result.
func TestJournalEveryFlipCaught(t *testing.T) {
	t.Parallel()
	r := result("s00500", t0, Working)
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

// TestJournalDiskFull writes to a journal whose disk is full (/dev/full
// answers every write with ENOSPC): the error names the journal, not the
// temporary name it was created under.
func TestJournalDiskFull(t *testing.T) {
	t.Parallel()
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full:", err)
	}
	j := MustJournal(t, t.TempDir(), "run-full")
	j.f.Close()
	j.f = full
	err = j.Append(result("a", t0, Working))
	if err == nil || !strings.Contains(err.Error(), "write "+j.Path()+": no space left on device") ||
		strings.Contains(err.Error(), ".new") || strings.Contains(err.Error(), "/dev/full") {
		t.Errorf("append on a full disk: %v, want it to name %s", err, j.Path())
	}
	j.Close()
}
