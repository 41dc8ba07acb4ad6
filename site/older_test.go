package site

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
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
		{"out_of_order", []record.PastCheck{{At: at, Status: data.Working}, {At: at - 5, Status: data.Working}}}, // a gap back in time still reads
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := decodeOlder(encodeOlder(tc.checks))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.checks) || len(got) > 0 && !reflect.DeepEqual(got, tc.checks) {
				t.Errorf("read back %+v, want %+v", got, tc.checks)
			}
			js, err := json.Marshal(tc.checks)
			if err != nil {
				t.Fatal(err)
			}
			if fromJSON, err := decodeOlder(js); err != nil || len(fromJSON) != len(tc.checks) || len(got) > 0 && !reflect.DeepEqual(fromJSON, tc.checks) {
				t.Errorf("the layout before reads %+v, %v; want %+v", fromJSON, err, tc.checks)
			}
		})
	}
}

// TestOlderDamage: an older-checks file with any byte flipped, cut short
// at any length, or whose count claims more checks than it has bytes for
// (its checksum right) is an error, never checks made up or a slice the
// size of the claim.
func TestOlderDamage(t *testing.T) { // not parallel: it counts allocations
	at := fixNow.Add(-20 * 24 * time.Hour).UnixMilli()
	var cs []record.PastCheck
	for i := range 60 {
		cs = append(cs, record.PastCheck{At: at + int64(i)*3_600_000, Status: data.Working, LatencyMS: new(int64(100 + i)), Phases: &record.Phases{DNSMS: new(int64(i))}})
	}
	b := encodeOlder(cs)
	for i := range b {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			d := bytes.Clone(b)
			d[i] ^= x
			if _, err := decodeOlder(d); err == nil {
				t.Fatalf("byte %d flipped by %#x: read as checks", i, x)
			}
		}
	}
	for n := range len(b) {
		if _, err := decodeOlder(b[:n]); err == nil {
			t.Fatalf("cut to %d of %d bytes: read as checks", n, len(b))
		}
	}
	// A count of 2^40 checks over a few bytes, summed as a whole file is.
	e := durable.NewEncoder(olderMagic, 16)
	e.Uvarint(1 << 40)
	e.Varint(at)
	claim := e.Finish()
	var err error
	allocs := testing.AllocsPerRun(10, func() { _, err = decodeOlder(claim) })
	if !errors.Is(err, errOlderCorrupt) || allocs > 10 {
		t.Errorf("a count of 2^40: %v after %.0f allocations; want %v, a few", err, allocs, errOlderCorrupt)
	}
	// Checksums right, a check wrong: a status past the list, a flag no
	// layout sets, a phase without phases.
	for _, tc := range []struct {
		name          string
		status, flags byte
	}{
		{"status", byte(len(data.Outcomes)), 0},
		{"flags", 0, olderFlags + 1},
		{"flags", 0, olderDNS},
		{"flags", 0, olderLatency | olderWait},
	} {
		e := durable.NewEncoder(olderMagic, 16)
		e.Uvarint(1)
		e.Varint(at)
		e.Byte(tc.status)
		e.String("")
		e.Byte(tc.flags)
		e.Varint(1)
		e.Varint(1)
		if _, err := decodeOlder(e.Finish()); !errors.Is(err, errOlderCorrupt) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("status %d, flags %#x: %v, want %v naming the %s", tc.status, tc.flags, err, errOlderCorrupt, tc.name)
		}
	}
}

// toLayoutBefore rewrites the older checks of id as a build before the
// binary layout kept them: a JSON list at olderJSONPath, and no .bin.
func toLayoutBefore(t *testing.T, f *fixture, id string) {
	t.Helper()
	b, err := os.ReadFile(olderPath(f.dir, id))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := decodeOlder(b)
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(cs)
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
	f, ctl := newStandard(t), newStandard(t)
	f.MustPublish()
	ctl.MustPublish()
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
	sameServerFiles(t, f, ctl, srvWorking.ID, "after the upgrade differs from a site that never had the layout before")
	got, err := os.ReadFile(olderPath(f.dir, srvWorking.ID))
	if err != nil {
		t.Fatal(err)
	}
	if want, err := os.ReadFile(olderPath(ctl.dir, srvWorking.ID)); err != nil || !bytes.Equal(got, want) {
		t.Errorf("the older checks after the upgrade differ from a site that never had the layout before (%v)", err)
	}
}

// TestPublishOlderChecksDamaged: a server whose older checks no longer
// read (a byte flipped on disk) is named lost, as one whose published file
// is, and the next publish rebuilds it from the history to the bytes of a
// site where nothing was damaged.
func TestPublishOlderChecksDamaged(t *testing.T) {
	t.Parallel()
	f, ctl := newStandard(t), newStandard(t)
	f.MustPublish()
	ctl.MustPublish()
	path := olderPath(f.dir, srvWorking.ID)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x10
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
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
