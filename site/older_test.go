package site

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
	"plug.directory/prober/site/record"
)

// TestOlderRoundTrip: the checks older than a server's history read back
// from their file as they were written, whatever each has of its latency
// and phases, and the layout before (a JSON list) reads as the same checks.
// The file's bytes counted (olderLen) are those written.
func TestOlderRoundTrip(t *testing.T) {
	t.Parallel()
	at := fixNow.Add(-20 * 24 * time.Hour).UnixMilli()
	for _, tc := range []struct {
		name   string
		checks []record.PastCheck
	}{
		{"none", []record.PastCheck{}},
		{"one_without_an_answer", []record.PastCheck{{At: at, Status: data.Refused, Detail: "connection refused"}}},
		{"every_status", func() []record.PastCheck {
			var cs []record.PastCheck
			for i, o := range data.Outcomes {
				cs = append(cs, record.PastCheck{At: at + int64(i)*3_600_000, Status: o})
			}
			return cs
		}()},
		{"latency_and_phases", []record.PastCheck{
			{At: at, Status: data.Working, LatencyMS: new(int64(1200)), Phases: &record.Phases{DNSMS: new(int64(12)), ConnectMS: new(int64(30)), TLSMS: new(int64(45)), WaitMS: new(int64(900))}},
			{At: at + 1, Status: data.Working, LatencyMS: new(int64(0)), Phases: &record.Phases{WaitMS: new(int64(3))}},                  // some phases not measured
			{At: at + 2, Status: data.Failing, Detail: "HTTP 502", Phases: &record.Phases{}},                                             // phases, none measured
			{At: at + 3, Status: data.NeedsKey, Detail: "HTTP 401 — ключ", LatencyMS: new(int64(-1))},                                    // a latency with no phases
			{At: at + 3_600_000_000, Status: data.Working, LatencyMS: new(int64(1 << 40)), Phases: &record.Phases{TLSMS: new(int64(7))}}, // far apart, large
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := encodeOlder(tc.checks)
			if n := olderLen(tc.checks); n != len(b) {
				t.Errorf("counted %d bytes, written %d", n, len(b))
			}
			got, err := readOlder(b)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.checks) != len(tc.checks) || len(got.checks) > 0 && !reflect.DeepEqual(got.checks, tc.checks) {
				t.Errorf("read back %+v, want %+v", got.checks, tc.checks)
			}
			js, err := json.Marshal(tc.checks)
			if err != nil {
				t.Fatal(err)
			}
			if fromJSON, err := readOlder(js); err != nil || len(fromJSON.checks) != len(tc.checks) || len(tc.checks) > 0 && !reflect.DeepEqual(fromJSON.checks, tc.checks) || fromJSON.end != -1 {
				t.Errorf("the layout before reads %+v (end %d), %v; want %+v, not to be appended to", fromJSON.checks, fromJSON.end, err, tc.checks)
			}
		})
	}
}

// hourly returns n checks an hour apart from at, each with its latency and
// phases.
func hourly(at int64, n int) []record.PastCheck {
	cs := make([]record.PastCheck, n)
	for i := range cs {
		cs[i] = record.PastCheck{At: at + int64(i)*3_600_000, Status: data.Working, LatencyMS: new(int64(100 + i%50)), Phases: &record.Phases{DNSMS: new(int64(i % 7)), WaitMS: new(int64(i % 90))}}
	}
	return cs
}

// TestOlderLog: a month of a server's older checks kept through 3,000
// renders, as its checks move on: each render that adds checks and lets
// the oldest age out appends one record of a few dozen bytes, the file
// always reads as the checks it must hold, and it is written anew only
// when it would grow past a quarter more than what it holds written anew
// (olderSlack), or when the checks are not the last ones and more (a new
// address).
func TestOlderLog(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(14, 3))
	at := fixNow.Add(-60 * 24 * time.Hour).UnixMilli()
	all := hourly(at, 4000)
	lo, hi := 0, 670 // the checks older than the history: a window that moves on
	file := encodeOlder(all[lo:hi])
	var appends, anew int
	var appended int // bytes of the appended records
	for step := range 3000 {
		n := 1 + rng.IntN(3) // a render adds a check or a few, and as many age out, or one fewer
		hi += n
		lo += n - rng.IntN(2)
		want := all[lo:hi]
		if step%500 == 499 { // a new address: the checks start afresh
			want = hourly(all[hi-1].At+1, 5)
		}
		log, err := readOlder(file)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		b, whole := olderChange(log, want)
		switch {
		case whole:
			file, anew = b, anew+1
		case b != nil:
			file, appends, appended = append(file[:log.end], b...), appends+1, appended+len(b)
		default:
			t.Fatalf("step %d: no change, where the checks moved on", step)
		}
		got, err := readOlder(file)
		if err != nil || !slices.EqualFunc(got.checks, want, samePastCheck) {
			t.Fatalf("step %d: the file reads %d checks (%v), want %d", step, len(got.checks), err, len(want))
		}
		if fresh := len(encodeOlder(want)); len(file) > fresh*olderSlack/4+64 {
			t.Fatalf("step %d: the file weighs %d bytes, holding what %d written anew", step, len(file), fresh)
		}
		if step%500 == 499 {
			all = append(all[:hi], want...)
			lo, hi = hi, hi+len(want)
			all = append(all, hourly(all[hi-1].At+3_600_000, 4000)...)
		}
	}
	if appends < 2500 || anew > 3000/6 || appended/appends > 80 {
		t.Errorf("%d appends of %d bytes on average, %d written anew; want most appended, of a few dozen bytes", appends, appended/max(appends, 1), anew)
	}
	if log, _ := readOlder(file); log.end != int64(len(file)) {
		t.Errorf("the log ends at %d of %d bytes", log.end, len(file))
	}
	if b, whole := olderChange(olderLog{checks: all[lo:hi], end: 10}, all[lo:hi]); b != nil || whole {
		t.Error("the same checks: a change")
	}
}

// TestOlderDamage: an older-checks file with any byte flipped is an error,
// as is a whole record whose checks are wrong (its checksums right); a
// record cut short at any length, as a publish killed while appending
// leaves it, reads as never written, and the next append writes over it.
// A count past a record's bytes allocates nothing of its size.
func TestOlderDamage(t *testing.T) { // not parallel: it counts allocations
	at := fixNow.Add(-20 * 24 * time.Hour).UnixMilli()
	cs := hourly(at, 210)
	file := encodeOlder(cs[:200])
	for _, hi := range []int{205, 210} {
		log, err := readOlder(file)
		if err != nil {
			t.Fatal(err)
		}
		b, whole := olderChange(log, cs[hi-200:hi])
		if whole || b == nil {
			t.Fatalf("checks moved on by 5: whole %v", whole)
		}
		file = append(file, b...)
	}
	for i := range file {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			d := bytes.Clone(file)
			d[i] ^= x
			if _, err := readOlder(d); err == nil {
				t.Fatalf("byte %d of %d flipped by %#x: read as checks", i, len(file), x)
			}
		}
	}
	// Two damages: the first is the one named.
	var offs []int
	if _, err := durable.EachRecord(file, len(olderMagic), 4, errOlderCorrupt, func(off int, _ []byte) error { offs = append(offs, off); return nil }); err != nil || len(offs) != 3 {
		t.Fatalf("%d records, %v; want 3", len(offs), err)
	}
	twice := bytes.Clone(file)
	twice[offs[0]+durable.RecordHead+1] ^= 0xff // a check of the first record
	twice[offs[2]] ^= 0xff                      // the last record's length
	if _, err := readOlder(twice); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("record at byte %d:", offs[0])) {
		t.Errorf("a record and a later length damaged: %v; want the record at byte %d named", err, offs[0])
	}
	before, err := readOlder(file[:len(file)-1]) // the last record cut short
	if err != nil || !slices.EqualFunc(before.checks, cs[5:205], samePastCheck) {
		t.Fatalf("the last record cut short: %d checks, %v; want the 200 before it", len(before.checks), err)
	}
	for n := int(before.end); n < len(file); n++ {
		log, err := readOlder(file[:n])
		if err != nil || log.end != before.end || !slices.EqualFunc(log.checks, before.checks, samePastCheck) {
			t.Fatalf("cut to %d of %d bytes: end %d, %v; want the checks before the last record, end %d", n, len(file), log.end, err, before.end)
		}
		b, _ := olderChange(log, cs[10:210])
		if got, err := readOlder(append(bytes.Clone(file[:log.end]), b...)); err != nil || !slices.EqualFunc(got.checks, cs[10:210], samePastCheck) {
			t.Fatalf("cut to %d bytes, appended again: %v", n, err)
		}
	}
	if _, err := readOlder(file[:len(olderMagic)-1]); !errors.Is(err, errOlderCorrupt) {
		t.Errorf("a file shorter than its magic: %v", err)
	}
	// Checksums right, a record wrong: a count of 2^40 checks over a few
	// bytes, a status past the list, a flag no layout sets, a phase
	// without phases, checks out of order.
	record := func(fill func(e *durable.Encoder)) []byte {
		e := durable.NewEncoder("", 32)
		fill(e)
		p := e.Bytes()
		f := durable.NewEncoder(olderMagic, 64)
		olderFrame(f, p)
		return f.Bytes()
	}
	claim := record(func(e *durable.Encoder) { e.Varint(0); e.Uvarint(1 << 40); e.Varint(at) })
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	allocs := testing.AllocsPerRun(10, func() { _, err = readOlder(claim) })
	runtime.ReadMemStats(&ms1)
	if bytes := (ms1.TotalAlloc - ms0.TotalAlloc) / 11; !errors.Is(err, errOlderCorrupt) || allocs > 16 || bytes > 4<<10 {
		t.Errorf("a count of 2^40: %v after %.0f allocations of %d bytes; want %v, a few small ones", err, allocs, bytes, errOlderCorrupt)
	}
	for _, tc := range []struct {
		name          string
		status, flags byte
		second        int64 // the second check's gap
	}{
		{"status", byte(len(data.Outcomes)), 0, 1},
		{"flags", 0, olderFlags + 1, 1},
		{"flags", 0, olderDNS, 1},
		{"flags", 0, olderLatency | olderWait, 1},
		{"order of checks", 0, 0, 0},
	} {
		b := record(func(e *durable.Encoder) {
			e.Varint(0)
			e.Uvarint(2)
			for _, gap := range []int64{at, tc.second} {
				e.Varint(gap)
				e.Byte(tc.status)
				e.String("")
				e.Byte(tc.flags)
				if tc.flags != 0 {
					e.Varint(1)
					e.Varint(1)
				}
			}
		})
		if _, err := readOlder(b); !errors.Is(err, errOlderCorrupt) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("status %d, flags %#x, second gap %d: %v, want %v naming the %s", tc.status, tc.flags, tc.second, err, errOlderCorrupt, tc.name)
		}
	}
}

// readOlderFile reads the older checks' file at path.
func readOlderFile(t *testing.T, path string) olderLog {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	log, err := readOlder(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return log
}

// publishedPair returns two standard sites published once: one to harm,
// one to compare it with.
func publishedPair(t *testing.T) (f, ctl *fixture) {
	t.Helper()
	f, ctl = newStandard(t), newStandard(t)
	f.MustPublish()
	ctl.MustPublish()
	return f, ctl
}

// sameAsControl fails t when srvWorking's files or older checks in f
// differ from ctl's, saying how.
func sameAsControl(t *testing.T, f, ctl *fixture, how string) {
	t.Helper()
	sameServerFiles(t, f, ctl, srvWorking.ID, how)
	got, want := readOlderFile(t, olderPath(f.dir, srvWorking.ID)), readOlderFile(t, olderPath(ctl.dir, srvWorking.ID))
	if !slices.EqualFunc(got.checks, want.checks, samePastCheck) {
		t.Errorf("the older checks %s: %d checks, want %d", how, len(got.checks), len(want.checks))
	}
}

// sameAfterNext publishes ctl in the minute a publish of f failed in,
// then each a minute later, and fails t when that publish of f leaves a
// server unpublished or srvWorking's files or older checks differ from
// ctl's, saying how.
func sameAfterNext(t *testing.T, f, ctl *fixture, how string) {
	t.Helper()
	ctl.MustPublish()
	f.now, ctl.now = f.now.Add(time.Minute), ctl.now.Add(time.Minute)
	if st := f.MustPublish(); len(st.Unpublished) > 0 {
		t.Fatalf("the publish after: unpublished %v", st.Unpublished)
	}
	ctl.MustPublish()
	sameAsControl(t, f, ctl, how)
}

// toLayoutBefore rewrites the older checks of id as a build before the
// binary layout kept them: a JSON list at olderJSONPath, and no .bin.
func toLayoutBefore(t *testing.T, f *fixture, id string) {
	t.Helper()
	js, err := json.Marshal(readOlderFile(t, olderPath(f.dir, id)).checks)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(olderJSONPath(f.dir, id), js, 0o644); err != nil {
		t.Fatal(err)
	}
	mustRemove(t, olderPath(f.dir, id))
}

// TestPublishOlderChecksUpgrade: a server whose older checks a build
// before kept as JSON keeps every one of them through the publish that
// renders it next, which writes them in the binary layout and removes the
// JSON: its files and its older checks are then the bytes of a site that
// never had the layout before.
func TestPublishOlderChecksUpgrade(t *testing.T) {
	t.Parallel()
	f, ctl := publishedPair(t)
	toLayoutBefore(t, f, srvWorking.ID)
	for _, x := range []*fixture{f, ctl} {
		x.now = x.now.Add(time.Hour)
		x.results(result(srvWorking, x.now.Add(-time.Minute), data.Working, ""))
		if st := x.MustPublish(); st.Rebuilt || len(st.Unpublished) > 0 || len(st.Bad) > 0 {
			t.Fatalf("publish after the upgrade: %+v", st)
		}
	}
	if _, err := os.Stat(olderJSONPath(f.dir, srvWorking.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the older checks of the layout before are left: %v", err)
	}
	sameAsControl(t, f, ctl, "after the upgrade differs from a site that never had the layout before")
}

// TestPublishOlderChecksDamaged: a server whose older checks no longer
// read (a byte flipped on disk) is named lost, as one whose published file
// is, and the next publish rebuilds it from the history to the bytes of a
// site where nothing was damaged.
func TestPublishOlderChecksDamaged(t *testing.T) {
	t.Parallel()
	f, ctl := publishedPair(t)
	flipMiddle(t, olderPath(f.dir, srvWorking.ID))
	for _, x := range []*fixture{f, ctl} {
		x.now = x.now.Add(time.Hour)
		x.results(result(srvWorking, x.now.Add(-time.Minute), data.Working, ""))
	}
	st := f.MustPublish()
	ctl.MustPublish()
	if len(st.Unpublished) != 1 || !errors.Is(st.Unpublished[0].Err, errRecordLost) ||
		!strings.Contains(st.Unpublished[0].Err.Error(), filepath.Join("older", srvWorking.ID+".bin")) {
		t.Fatalf("unpublished %v, want %s's record named lost at its older checks", st.Unpublished, srvWorking.ID)
	}
	f.now, ctl.now = f.now.Add(time.Minute), ctl.now.Add(time.Minute)
	if st := f.MustPublish(); !st.Rebuilt || len(st.Unpublished) > 0 {
		t.Fatalf("the publish after: rebuilt %v, unpublished %v", st.Rebuilt, st.Unpublished)
	}
	ctl.MustPublish()
	sameServerFiles(t, f, ctl, srvWorking.ID, "after the rebuild differs from a site where nothing was damaged")
}

// TestPublishOlderChecksAppended: a publish that adds a check to a server
// with older checks appends a record of a few dozen bytes to their file,
// in place, not the file anew, over what a publish killed while appending
// left past its end; the checks it then holds are those a rebuild from the
// history gives.
func TestPublishOlderChecksAppended(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	f.MustPublish()
	path := olderPath(f.dir, srvWorking.ID)
	for i := range 3 {
		before, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		size := before.Size()
		if i == 1 { // a publish killed while it appended: part of a record longer than the next, past the end
			fl, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			e := durable.NewEncoder("", 128)
			olderFrame(e, bytes.Repeat([]byte{7}, 200))
			if _, err := fl.Write(e.Bytes()[:120]); err != nil {
				t.Fatal(err)
			}
			if err := fl.Close(); err != nil {
				t.Fatal(err)
			}
		}
		f.now = f.now.Add(time.Hour)
		f.results(result(srvWorking, f.now.Add(-time.Minute), data.Working, ""))
		if st := f.MustPublish(); len(st.Unpublished) > 0 || st.Rebuilt {
			t.Fatalf("publish %d: %+v", i, st)
		}
		after, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if grew := after.Size() - size; grew <= 0 || grew > 100 || !os.SameFile(before, after) {
			t.Errorf("publish %d: the older checks' file grew by %d bytes, the same file %v; want a record of a few dozen bytes appended", i, grew, os.SameFile(before, after))
		}
	}
	got := readOlderFile(t, path)
	if err := os.RemoveAll(filepath.Join(f.dir, "site")); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(time.Minute)
	if st := f.MustPublish(); !st.Rebuilt {
		t.Fatal("no rebuild without the site's record")
	}
	if want := readOlderFile(t, path); len(got.checks) == 0 || !slices.EqualFunc(got.checks, want.checks, samePastCheck) {
		t.Errorf("the appended file holds %d checks, a rebuild %d", len(got.checks), len(want.checks))
	}
}

// TestPublishOlderChecksWriteFails: a publish that cannot write a server's
// older checks (a full disk) leaves its published file as it was, so the
// check that was to move from its history to its older checks is in one of
// them: the server is named unpublished, and the next publish gives the
// files and older checks of a site where nothing failed. Written the other
// way round, the check was in neither.
func TestPublishOlderChecksWriteFails(t *testing.T) {
	t.Parallel()
	f, ctl := publishedPair(t)
	for _, x := range []*fixture{f, ctl} {
		x.now = x.now.Add(time.Hour)
		x.results(result(srvWorking, x.now.Add(-time.Minute), data.Working, ""))
	}
	full := errors.New("no space left on device")
	cfg := f.config()
	cfg.calls.Write = func(fl *os.File, b []byte) (int, error) {
		if strings.Contains(fl.Name(), string(filepath.Separator)+"older"+string(filepath.Separator)) {
			return 0, full
		}
		return fl.Write(b)
	}
	st, err := Publish(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Unpublished) != 1 || st.Unpublished[0].ID != srvWorking.ID || !errors.Is(st.Unpublished[0].Err, full) {
		t.Fatalf("unpublished %v, want %s for its older checks", st.Unpublished, srvWorking.ID)
	}
	sameAfterNext(t, f, ctl, "after a publish that could not write its older checks differs from a site where nothing failed")
}

// TestPublishFileBehindOlderChecks: a publish whose server's published
// file does not take its place once its older checks took the new check
// (a full disk as the file is written; a flush that fails, or a kill,
// before the file is renamed over the old one) leaves the older checks
// ahead of the file. The next publish reads the result again and brings
// the file up to it, as in a site where nothing failed. With the check
// found among the older checks already, the file kept its status from
// before the check (record.Summary.Apply adds a check once).
func TestPublishFileBehindOlderChecks(t *testing.T) {
	t.Parallel()
	full := errors.New("no space left on device")
	for _, tc := range []struct {
		name string
		fail func(cfg *Config)
	}{
		{"file_write_fails", func(cfg *Config) {
			cfg.calls.Write = func(fl *os.File, b []byte) (int, error) {
				if filepath.Base(filepath.Dir(fl.Name())) == "servers" && strings.HasPrefix(filepath.Base(fl.Name()), "."+srvWorking.ID+".json") {
					return 0, full
				}
				return fl.Write(b)
			}
		}},
		{"flush_fails", func(cfg *Config) { (&flushCounter{fail: full}).install(cfg) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, ctl := publishedPair(t)
			for _, x := range []*fixture{f, ctl} {
				x.now = x.now.Add(time.Hour)
				x.results(result(srvWorking, x.now.Add(-time.Minute), data.Failing, "HTTP 502"))
			}
			before := readOlderFile(t, olderPath(f.dir, srvWorking.ID))
			cfg := f.config()
			tc.fail(&cfg)
			st, err := Publish(context.Background(), cfg)
			if !errors.Is(err, full) && !(len(st.Unpublished) == 1 && errors.Is(st.Unpublished[0].Err, full)) {
				t.Fatalf("publish: %v, unpublished %v; want it to fail for want of space", err, st.Unpublished)
			}
			if after := readOlderFile(t, olderPath(f.dir, srvWorking.ID)); len(after.checks) != len(before.checks)+1 {
				t.Fatalf("the older checks hold %d checks, want the %d before and the new one: the case this test is for", len(after.checks), len(before.checks))
			}
			sameAfterNext(t, f, ctl, "after a publish whose published file stayed behind its older checks differs from a site where nothing failed")
		})
	}
}

// TestPublishOlderChecksAppendLost: a power cut before a publish's flush
// may keep the rename of a server's published file and lose the append to
// its older checks. The older checks hold the history's too, so the check
// the file's history let go is still among them: the next publish gives
// the files and older checks of a site where nothing was lost. When they
// held only the checks beyond the history, that check was in neither.
func TestPublishOlderChecksAppendLost(t *testing.T) {
	t.Parallel()
	f, ctl := publishedPair(t)
	path := olderPath(f.dir, srvWorking.ID)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		for _, x := range []*fixture{f, ctl} {
			x.now = x.now.Add(time.Hour)
			x.results(result(srvWorking, x.now.Add(-time.Minute), data.Working, ""))
			x.MustPublish()
		}
		if err := os.WriteFile(path, before, 0o644); err != nil { // the append lost
			t.Fatal(err)
		}
		before = nil
		if before, err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
	}
	f.now, ctl.now = f.now.Add(time.Minute), ctl.now.Add(time.Minute)
	f.MustPublish()
	ctl.MustPublish()
	sameAsControl(t, f, ctl, "after an append to its older checks was lost differs from a site where nothing was lost")
}
