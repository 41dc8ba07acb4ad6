package spool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
)

func sampleLedger() *Ledger {
	l := NewLedger()
	l.Created = 1_780_000_000
	l.LastMinute = 1_780_003_600
	l.Hosts["a.example.com"] = []HostStart{MakeHostStart(1_780_000_010, true), MakeHostStart(1_780_000_040, false)}
	l.Hosts["b.example.com"] = nil
	l.Servers = append(l.Servers, LedgerServer{ID: "x", Rank: 1, URLHash: URLHash("https://a.example.com/x"), FirstSeen: l.Created, Planned: 1_780_000_010,
		Reason: CodeNew, NextDue: 1_780_003_610, Cadence: 3600})
	l.Servers = append(l.Servers, LedgerServer{ID: "y", Rank: 5000, URLHash: 7, FirstSeen: l.Created, Planned: 1_780_003_640, Reason: CodeRetry,
		PrevPlanned: 1_780_000_040, PrevReason: CodeRoutine, NextDue: 1_780_003_640, Cadence: 86400 * 3})
	return l
}

func TestLedgerRoundTrip(t *testing.T) {
	dir := t.TempDir()
	empty, err := ReadLedger(dir)
	if err != nil || len(empty.Servers) != 0 || empty.LastMinute != 0 {
		t.Fatalf("ReadLedger of a new directory = %+v, %v; want an empty ledger", empty, err)
	}
	l := sampleLedger()
	if err := WriteLedger(dir, l); err != nil {
		t.Fatal(err)
	}
	got, err := ReadLedger(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(l) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, l)
	}
	if s, _ := got.Lookup("y"); s.EffectiveCadence().Hours() != 72 || s.NextDueTime().Unix() != 1_780_003_640 {
		t.Errorf("y: cadence %v, next due %v", s.EffectiveCadence(), s.NextDueTime())
	}
	if h := got.Hosts["a.example.com"]; !h[0].New() || h[1].New() || h[1].Unix() != 1_780_000_040 {
		t.Errorf("host starts decoded as %v", h)
	}
}

func TestLedgerCorrupt(t *testing.T) {
	b, err := sampleLedger().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	for i := range len(b) {
		c := append([]byte(nil), b...)
		c[i] ^= 0x41
		if err := NewLedger().UnmarshalBinary(c); !errors.Is(err, ErrLedgerCorrupt) {
			t.Fatalf("byte %d flipped: err %v, want ErrLedgerCorrupt", i, err)
		}
	}
	for n := range len(b) {
		if err := NewLedger().UnmarshalBinary(b[:n]); !errors.Is(err, ErrLedgerCorrupt) {
			t.Fatalf("truncated to %d bytes: err %v, want ErrLedgerCorrupt", n, err)
		}
	}
	dir := t.TempDir()
	if err := os.MkdirAll(dir+"/plans", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(data.Dir(dir).Ledger(), b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLedger(dir); !errors.Is(err, ErrLedgerCorrupt) {
		t.Errorf("ReadLedger of a torn file: %v, want ErrLedgerCorrupt", err)
	}
}

func TestLockPlans(t *testing.T) {
	dir := t.TempDir()
	unlock, err := LockPlans(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error)
	go func() {
		u, err := LockPlans(dir) // waits for the first
		if err == nil {
			err = u()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("second lock taken while the first is held: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// TestRebuildLedger: a lost ledger is made again from the plans of the last
// day, so the hosts' starts still count toward their caps.
func TestRebuildLedger(t *testing.T) {
	dir := t.TempDir()
	m0 := time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)
	plans := map[time.Time][]data.PlannedCheck{
		m0.Add(-25 * time.Hour): {{At: m0.Add(-25 * time.Hour), ID: "old", URL: "https://h.example.net/old", Host: "h.example.net", Reason: data.ReasonRoutine}},
		m0.Add(-2 * time.Hour): {
			{At: m0.Add(-2*time.Hour + 5*time.Second), ID: "a", URL: "https://h.example.net/a", Host: "h.example.net", Reason: data.ReasonNew, Rank: 3},
			{At: m0.Add(-2*time.Hour + 9*time.Second), ID: "b", URL: "", Reason: data.ReasonRoutine, Rank: 4},
		},
		m0.Add(-time.Minute): {{At: m0.Add(-30 * time.Second), ID: "a", URL: "https://h.example.net/a", Host: "h.example.net", Reason: data.ReasonRetry, Rank: 3}},
	}
	for m, cs := range plans {
		if err := WritePlan(dir, m, cs); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(data.Dir(dir).Plan(m0.Add(-time.Hour)), []byte("{not json\n"), 0o644)
	l, bad := RebuildLedger(dir, m0)
	if len(bad) != 1 {
		t.Errorf("bad plans: %v, want the one damaged file", bad)
	}
	want := []HostStart{MakeHostStart(m0.Add(-2*time.Hour+5*time.Second).Unix(), true), MakeHostStart(m0.Add(-30*time.Second).Unix(), false)}
	if got := l.Hosts["h.example.net"]; !slices.Equal(got, want) {
		t.Errorf("host starts %v, want %v (not the one of 25 h ago)", got, want)
	}
	if a, _ := l.Lookup("a"); a.Planned != m0.Add(-30*time.Second).Unix() || a.Reason != CodeRetry || a.URLHash != URLHash("https://h.example.net/a") {
		t.Errorf("a: %+v", a)
	}
	if _, ok := l.Lookup("old"); ok || l.Created != m0.Unix() || l.LastMinute != m0.Add(-time.Minute).Unix() {
		t.Errorf("rebuilt ledger: %+v", l)
	}
}

// TestLedgerOldVersions: ledgers of the versions before (4, summed by
// CRC-32C; 3, by CRC-32 IEEE) are read as they were written, a flip in them
// is still caught, and the next write is version 5.
func TestLedgerOldVersions(t *testing.T) {
	v4, err := os.ReadFile("testdata/ledger-v4.bin") // written by the version 4 encoder
	if err != nil {
		t.Fatal(err)
	}
	v3 := append([]byte(ledgerMagicV3), v4[len(ledgerMagicV4):len(v4)-4]...)
	v3 = binary.LittleEndian.AppendUint32(v3, crc32.ChecksumIEEE(v3))
	for _, tc := range []struct {
		name string
		file []byte
	}{{"version_4", v4}, {"version_3", v3}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Dir(data.Dir(dir).Ledger()), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(data.Dir(dir).Ledger(), tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := readBoth(t, dir)
			if err != nil || !l.Equal(sampleLedger()) {
				t.Fatalf("read: %+v %v; want the sample ledger", l, err)
			}
			flipped := slices.Clone(tc.file)
			flipped[len(flipped)/2] ^= 1
			if err := NewLedger().UnmarshalBinary(flipped); !errors.Is(err, ErrLedgerCorrupt) {
				t.Errorf("flipped: %v, want ErrLedgerCorrupt", err)
			}
			if err := WriteLedger(dir, l); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(data.Dir(dir).Ledger()); !strings.HasPrefix(string(b), ledgerMagicV5) {
				t.Errorf("written as %q, want %q", b[:len(ledgerMagicV5)], ledgerMagicV5)
			}
			if back, err := ReadLedger(dir); err != nil || !back.Equal(l) {
				t.Errorf("read back: %v", err)
			}
		})
	}
}

// TestLedgerMarshalRuns: a ledger of more records than one run takes is
// encoded side by side on every core into the bytes one core writes, reads
// back equal, and a bad record in any run is an error.
func TestLedgerMarshalRuns(t *testing.T) {
	l := NewLedger()
	l.Created, l.LastMinute = 1_780_000_000, 1_780_003_600
	l.Hosts["a.example.com"] = []HostStart{MakeHostStart(1_780_000_010, true)}
	for i := range 200_003 {
		l.Servers = append(l.Servers, LedgerServer{ID: "srv-" + strconv.Itoa(i), Rank: int32(1 + i), URLHash: uint64(i) * 0x9e3779b97f4a7c15,
			FirstSeen: l.Created - int64(i), Planned: l.LastMinute + int64(i%120), Reason: ReasonCode(i % 3), NextDue: l.LastMinute + int64(i),
			Seen: int64(i % 2 * i), Cadence: int32(3600 * (1 + i%24))})
	}
	marshal := func(procs int) []byte {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		b, err := l.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	one := marshal(1)
	for _, procs := range []int{2, 3, 4} {
		if !slices.Equal(marshal(procs), one) {
			t.Errorf("encoded on %d cores: not the bytes of one", procs)
		}
	}
	got := NewLedger()
	if err := got.UnmarshalBinary(one); err != nil || !got.Equal(l) {
		t.Errorf("round trip: %v, equal %v", err, got.Equal(l))
	}
	l.Servers[len(l.Servers)-1].PrevReason = CodeRoutine + 1
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	if _, err := l.MarshalBinary(); err == nil || !strings.Contains(err.Error(), "bad reason code") {
		t.Errorf("a bad record in the last run: error %v", err)
	}
}

// TestLedgerRunsWhileProcsChange: the runs a base or a delta is coded in
// are counted once, so GOMAXPROCS changing meanwhile (another goroutine,
// or the runtime following the container's CPU limit) neither panics nor
// codes ids at another run's offsets nor finds the servers not the base's
// (a new base for a delta). Not parallel: it changes GOMAXPROCS.
func TestLedgerRunsWhileProcsChange(t *testing.T) {
	const n, m = 4<<16 + 3, 1_780_003_600 // up to four runs
	l := genLedger(n, 50, m)
	var want []byte
	func() {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		var err error
		if want, err = l.MarshalBinary(); err != nil {
			t.Fatal(err)
		}
	}()
	b, err := parseBase(string(want))
	if err != nil {
		t.Fatal(err)
	}
	changed := cloneLedger(l)
	for _, i := range []int{0, n / 4, n / 2, n - 1} {
		changed.Servers[i].Planned = m + 60
	}
	kept := []int{1, n/4 + 1, n - 2} // records an earlier delta held, unchanged, in three runs
	wantDelta, ok, err := b.delta(changed, kept)
	if err != nil || !ok {
		t.Fatalf("delta: ok %v, %v", ok, err)
	}

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for p := 0; ; p++ {
			select {
			case <-stop:
				return
			default:
				runtime.GOMAXPROCS(1 + p%4)
				runtime.Gosched()
			}
		}
	}()
	defer func() { close(stop); <-done }()
	for _, tc := range []struct {
		name string
		code func() error
	}{
		{"base", func() error {
			got, err := l.MarshalBinary()
			if err == nil && !slices.Equal(got, want) {
				err = errors.New("not the bytes coded on one core")
			}
			return err
		}},
		{"delta", func() error {
			got, ok, err := b.delta(changed, kept)
			if err == nil && (!ok || !slices.Equal(got, wantDelta)) {
				err = fmt.Errorf("ok %v: not the delta coded on one core", ok)
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for round := range 30 {
				if err := tc.code(); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
			}
		})
	}
}
