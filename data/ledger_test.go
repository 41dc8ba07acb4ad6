package data

import (
	"errors"
	"os"
	"testing"
	"time"
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
	if err := os.WriteFile(LedgerPath(dir), b[:len(b)/2], 0o644); err != nil {
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
