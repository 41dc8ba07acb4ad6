package spool

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"plug.directory/prober/data"
	"plug.directory/prober/data/datatest"
	"plug.directory/prober/internal/durable"
)

// genLedger returns a ledger of n servers on hosts hosts, three starts
// each, as of minute m (unix s).
func genLedger(n, hosts int, m int64) *Ledger {
	l := NewLedger()
	l.Created, l.LastMinute = 1_780_000_000, m
	for i := range n {
		l.Servers = append(l.Servers, LedgerServer{ID: fmt.Sprintf("srv-%06d", i), Rank: int32(i + 1), URLHash: uint64(i) * 0x9e3779b97f4a7c15,
			FirstSeen: l.Created, Planned: m - int64(i%3600), NextDue: m + int64(i), Cadence: 3600, Reason: CodeRoutine, Seen: -62135596800})
	}
	for h := range hosts {
		l.Hosts[fmt.Sprintf("h%05d.example", h)] = []HostStart{MakeHostStart(m-600, true), MakeHostStart(m-300, false), MakeHostStart(m-60, false)}
	}
	return l
}

// cloneLedger returns a copy of l's records, to compare with later.
func cloneLedger(l *Ledger) *Ledger {
	c := &Ledger{Created: l.Created, LastMinute: l.LastMinute, Servers: slices.Clone(l.Servers), Hosts: maps.Clone(l.Hosts)}
	for h, s := range c.Hosts {
		c.Hosts[h] = slices.Clone(s)
	}
	return c
}

// plansDir returns a data directory holding l, written as a base.
func plansDir(t *testing.T, l *Ledger) data.Dir {
	t.Helper()
	d := data.Dir(t.TempDir())
	if err := WriteLedger(string(d), l); err != nil {
		t.Fatal(err)
	}
	return d
}

// readBoth is ReadLedger, checked against EachLedgerServer: the records
// each is passed are ReadLedger's, in its order, and either both read the
// ledger or both fail, damage as damage.
func readBoth(t *testing.T, dir string) (*Ledger, error) {
	t.Helper()
	l, err := ReadLedger(dir)
	var each []LedgerServer
	_, eerr := EachLedgerServer(dir, func(s *LedgerServer) { each = append(each, *s) })
	switch {
	case (err == nil) != (eerr == nil) || errors.Is(err, ErrLedgerCorrupt) != errors.Is(eerr, ErrLedgerCorrupt):
		t.Errorf("ReadLedger: %v; EachLedgerServer: %v", err, eerr)
	case err == nil && !slices.Equal(each, l.Servers):
		t.Errorf("EachLedgerServer passed other records than ReadLedger (%d and %d) in %s", len(each), len(l.Servers), dir)
	}
	return l, err
}

func fileSize(path string) int {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return int(fi.Size())
}

// TestLedgerWrites: a plan that keeps the servers writes only a delta of
// the records and host starts it changed, which reads back as the ledger;
// another set of servers, or a delta past a sixteenth of the base, writes a
// new base and no delta.
func TestLedgerWrites(t *testing.T) {
	const n, hosts, m = 20_000, 2_000, 1_780_003_600
	for _, tc := range []struct {
		name     string
		change   func(l *Ledger)
		newBase  bool
		maxDelta int // bytes
	}{
		{"only_the_minute", func(l *Ledger) { l.LastMinute += 60 }, false, 64},
		{"600_records", func(l *Ledger) {
			l.LastMinute += 60
			for i := 0; i < n; i += n / 600 {
				l.Servers[i].PrevPlanned, l.Servers[i].Planned, l.Servers[i].NextDue = l.Servers[i].Planned, m+60+int64(i%60), m+3660
			}
		}, false, 600 * (payloadSize + 3)},
		{"hosts", func(l *Ledger) {
			l.Hosts["h00001.example"] = l.Hosts["h00001.example"][1:]                                                 // the oldest dropped
			l.Hosts["h00002.example"] = append(l.Hosts["h00002.example"][:3:3], MakeHostStart(m+61, false))           // one appended
			l.Hosts["h00003.example"] = append(l.Hosts["h00003.example"][1:2:2], MakeHostStart(m+62, true))           // both, one taken back
			l.Hosts["h00004.example"] = []HostStart{MakeHostStart(m-3000, false), MakeHostStart(m+63, false)}         // none kept
			l.Hosts["h00005.example"] = nil                                                                           // emptied, kept
			delete(l.Hosts, "h00006.example")                                                                         // gone
			l.Hosts["a-new.example"], l.Hosts["z-new.example"] = []HostStart{MakeHostStart(-5, false)}, []HostStart{} // new
		}, false, 200},
		{"a_server_gone", func(l *Ledger) { l.Servers = slices.Delete(l.Servers, 7, 8) }, true, 0},
		{"servers_reordered", func(l *Ledger) { l.Servers[1], l.Servers[2] = l.Servers[2], l.Servers[1] }, true, 0},
		{"past_a_sixteenth", func(l *Ledger) {
			for i := range l.Servers {
				l.Servers[i].Seen = m
			}
		}, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := genLedger(n, hosts, m)
			d := plansDir(t, l)
			base, _ := os.ReadFile(d.Ledger())
			tc.change(l)
			if err := WriteLedger(string(d), l); err != nil {
				t.Fatal(err)
			}
			after, _ := os.ReadFile(d.Ledger())
			delta := fileSize(d.LedgerDelta())
			if rewritten := string(after) != string(base); rewritten != tc.newBase {
				t.Errorf("base rewritten: %v, want %v", rewritten, tc.newBase)
			}
			if tc.newBase && delta != -1 || !tc.newBase && (delta < 0 || delta > tc.maxDelta) {
				t.Errorf("delta of %d bytes (base %d), want at most %d", delta, len(base), tc.maxDelta)
			}
			got, err := readBoth(t, string(d))
			if err != nil || !got.Equal(l) {
				t.Fatalf("read back: %v, equal %v", err, err == nil && got.Equal(l))
			}
			// The next plan's delta is again of the base, and reads back.
			l.LastMinute += 60
			l.Servers[n/2].Planned = l.LastMinute
			if err := WriteLedger(string(d), got); err != nil {
				t.Fatal(err)
			}
			if err := WriteLedger(string(d), l); err != nil {
				t.Fatal(err)
			}
			if got, err := readBoth(t, string(d)); err != nil || !got.Equal(l) {
				t.Errorf("read back the next: %v", err)
			}
		})
	}
}

// TestLedgerDamage: a flipped byte or a tear in either file, a delta of
// another base or one without its base is ErrLedgerCorrupt (the planner
// rebuilds it); a delta of the base before, which a write stopped after
// the new base leaves, is passed over.
func TestLedgerDamage(t *testing.T) {
	setup := func(t *testing.T) (data.Dir, *Ledger) {
		l := sampleLedger()
		d := plansDir(t, l)
		l.LastMinute += 60
		l.Servers[0].Planned = l.LastMinute + 5
		l.Hosts["a.example.com"] = append(l.Hosts["a.example.com"], MakeHostStart(l.LastMinute+5, false))
		if err := WriteLedger(string(d), l); err != nil {
			t.Fatal(err)
		}
		return d, l
	}
	t.Run("every_byte", func(t *testing.T) {
		d, _ := setup(t)
		for _, path := range []string{d.Ledger(), d.LedgerDelta()} {
			b, _ := os.ReadFile(path)
			for i := range len(b) {
				for _, damage := range [][]byte{flip(b, i), b[:i]} {
					os.WriteFile(path, damage, 0o644)
					if _, err := readBoth(t, string(d)); !errors.Is(err, ErrLedgerCorrupt) {
						t.Fatalf("%s damaged at byte %d of %d: %v, want ErrLedgerCorrupt", path, i, len(b), err)
					}
				}
			}
			os.WriteFile(path, b, 0o644)
		}
	})
	other := func(t *testing.T, d data.Dir) {
		l := sampleLedger()
		l.Created++ // another base of the same number
		os.Rename(plansDir(t, l).Ledger(), d.Ledger())
	}
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, d data.Dir)
		want   func(l *Ledger) *Ledger // nil: ErrLedgerCorrupt
	}{
		{"delta_of_another_base", other, nil},
		{"delta_of_a_later_base", func(t *testing.T, d data.Dir) {
			b, _ := os.ReadFile(d.LedgerDelta())
			b[len(ledgerDeltaMagic)]++ // the number of the base it names
			os.WriteFile(d.LedgerDelta(), durable.NewEncoder(string(b[:len(b)-4]), 0).Finish(), 0o644)
		}, nil},
		{"delta_without_its_base", func(t *testing.T, d data.Dir) { os.Remove(d.Ledger()) }, nil},
		{"delta_of_the_base_before", func(t *testing.T, d data.Dir) {
			stale, _ := os.ReadFile(d.LedgerDelta())
			l, _ := ReadLedger(string(d))
			l.Servers = l.Servers[1:] // a new base
			if err := WriteLedger(string(d), l); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(d.LedgerDelta(), stale, 0o644)
		}, func(l *Ledger) *Ledger { l.Servers = l.Servers[1:]; return l }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, l := setup(t)
			tc.damage(t, d)
			got, err := readBoth(t, string(d))
			if tc.want == nil {
				if !errors.Is(err, ErrLedgerCorrupt) {
					t.Errorf("got %v, want ErrLedgerCorrupt", err)
				}
				return
			}
			if err != nil || !got.Equal(tc.want(l)) {
				t.Errorf("got %+v %v, want %+v", got, err, tc.want(l))
			}
		})
	}
}

func flip(b []byte, i int) []byte {
	c := slices.Clone(b)
	c[i] ^= 0x41
	return c
}

// TestLedgerWriteStopped: a write stopped at any file system call (a
// crash, a full disk) leaves a ledger that reads as before the write or
// after it, whether it writes a delta, a new base, or the first base of a
// ledger of version 4 or rebuilt (rule P3).
func TestLedgerWriteStopped(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(l *Ledger) *Ledger
	}{
		{"delta", func(l *Ledger) *Ledger { l.LastMinute += 60; l.Servers[1].Planned = l.LastMinute; return l }},
		{"new_base", func(l *Ledger) *Ledger { l.Servers = l.Servers[:1]; return l }},
		{"rebuilt", func(l *Ledger) *Ledger { c := cloneLedger(l); c.LastMinute += 60; return c }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for stop := 0; ; stop++ {
				l := genLedger(300, 30, 1_780_003_600)
				d := plansDir(t, l)
				l.Servers[0].Planned++ // a delta on disk before
				if err := WriteLedger(string(d), l); err != nil {
					t.Fatal(err)
				}
				l, _ = ReadLedger(string(d))
				before := cloneLedger(l)
				after := tc.change(l)
				calls := 0
				fail := func() error {
					if calls++; calls > stop {
						return errors.New("stopped")
					}
					return nil
				}
				fs := durable.Files{
					Write: func(f *os.File, b []byte) (int, error) {
						if err := fail(); err != nil {
							return 0, err
						}
						return f.Write(b)
					},
					Sync: func(f *os.File) error { return errors.Join(fail(), f.Sync()) },
					Rename: func(a, b string) error {
						if err := fail(); err != nil {
							return err
						}
						return os.Rename(a, b)
					},
					Remove: func(path string) error {
						if err := fail(); err != nil {
							return err
						}
						return os.Remove(path)
					},
				}
				err := writeLedger(fs, d, after)
				got, rerr := ReadLedger(string(d))
				if rerr != nil || !got.Equal(before) && !got.Equal(after) {
					t.Fatalf("stopped at call %d (%v): read %v, neither before nor after", stop, err, rerr)
				}
				if err == nil {
					if !got.Equal(after) {
						t.Fatalf("written in %d calls: not what was written", stop)
					}
					return
				}
			}
		})
	}
}

// TestLedgerReadWhileWritten: a reader without the plans' lock (the site,
// the metrics) that reads the base just before a plan replaces it reads
// again, and gets the new ledger: not the old base with the new delta
// (damage), nor the old base without its delta (an older ledger).
func TestLedgerReadWhileWritten(t *testing.T) {
	for _, tc := range []struct {
		name    string
		newBase []bool // of each write
	}{{"new_base", []bool{true}}, {"new_base_and_delta", []bool{true, false}}, {"two_new_bases", []bool{true, true}}} {
		t.Run(tc.name, func(t *testing.T) {
			l := genLedger(300, 30, 1_780_003_600)
			d := plansDir(t, l)
			l.LastMinute += 60
			if err := WriteLedger(string(d), l); err != nil {
				t.Fatal(err)
			}
			var want *Ledger
			defer func(f func()) { betweenReads = f }(betweenReads)
			betweenReads = func() {
				betweenReads = func() {}
				for _, newBase := range tc.newBase {
					if newBase {
						l.Servers = l.Servers[1:]
					}
					l.LastMinute += 60
					if err := WriteLedger(string(d), l); err != nil {
						t.Error(err)
					}
				}
				want = cloneLedger(l)
			}
			got, err := ReadLedger(string(d))
			if err != nil || !got.Equal(want) {
				t.Errorf("read %v; not the ledger written", err)
			}
		})
	}
}

// TestLedgerChangesReadWhileWritten: a plan that writes a new base while
// EachLedgerChange reads its delta makes it read again and say the base is
// another (each not called); one that writes only a delta meanwhile is
// read as it is then.
func TestLedgerChangesReadWhileWritten(t *testing.T) {
	for _, newBase := range []bool{true, false} {
		t.Run(fmt.Sprintf("new_base=%v", newBase), func(t *testing.T) {
			l := genLedger(300, 30, 1_780_003_600)
			d := plansDir(t, l)
			mark, err := EachLedgerServer(string(d), func(*LedgerServer) {})
			if err != nil {
				t.Fatal(err)
			}
			defer func(f func()) { betweenReads = f }(betweenReads)
			betweenReads = func() {
				betweenReads = func() {}
				if newBase {
					l.Servers = l.Servers[1:]
				}
				l.Servers[7].NextDue += 60
				if err := WriteLedger(string(d), l); err != nil {
					t.Error(err)
				}
			}
			var got []int
			ok, err := EachLedgerChange(string(d), mark, func(i int, s *LedgerServer) {
				if s.NextDue != l.Servers[i].NextDue {
					t.Errorf("record %d: next check %d, the ledger written says %d", i, s.NextDue, l.Servers[i].NextDue)
				}
				got = append(got, i)
			})
			if err != nil || ok == newBase || !newBase && !slices.Equal(got, []int{7}) || newBase && got != nil {
				t.Errorf("EachLedgerChange: ok %v, %v, records %v", ok, err, got)
			}
		})
	}
}

// TestKeepLedgerAsideBounded: each damaged ledger kept aside stays for
// inspection, the last ledgerAsideKeep of each file; a ledger damaged
// every day does not fill plans/.
func TestKeepLedgerAsideBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := data.Dir(dir)
	if err := os.MkdirAll(filepath.Dir(d.Ledger()), 0o755); err != nil {
		t.Fatal(err)
	}
	var suffixes []string
	for day := range 5 {
		for _, p := range []string{d.Ledger(), d.LedgerDelta()} {
			if err := os.WriteFile(p, []byte("damaged"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		s := ".corrupt-" + datatest.T0.AddDate(0, 0, day).Format("20060102T150405")
		suffixes = append(suffixes, s)
		if _, err := KeepLedgerAside(dir, s); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range suffixes {
		for _, p := range []string{d.Ledger(), d.LedgerDelta()} {
			_, err := os.Stat(p + s)
			if kept := i >= len(suffixes)-ledgerAsideKeep; kept != (err == nil) {
				t.Errorf("%s: kept %v, want %v", filepath.Base(p+s), err == nil, kept)
			}
		}
	}
}

// TestLedgerDeltaKeepsItsRecords: a record the delta held stays in the
// next one even when it is back to the base's (the site applies the delta
// alone: without it, it would keep the value it changed to), and
// EachLedgerChange passes the delta's records while the base is the one
// marked, and reports that it is not once a new base is written.
func TestLedgerDeltaKeepsItsRecords(t *testing.T) {
	const n, m = 300, 1_780_003_600
	l := genLedger(n, 30, m)
	d := plansDir(t, l)
	mark, err := EachLedgerServer(string(d), func(*LedgerServer) {})
	if err != nil || mark.Servers != n || mark.Seq == 0 {
		t.Fatalf("mark of the base: %+v, %v", mark, err)
	}
	changes := func() map[int]LedgerServer {
		t.Helper()
		got := map[int]LedgerServer{}
		ok, err := EachLedgerChange(string(d), mark, func(i int, s *LedgerServer) { got[i] = *s })
		if err != nil || !ok {
			t.Fatalf("EachLedgerChange: ok %v, %v", ok, err)
		}
		return got
	}
	if got := changes(); len(got) != 0 {
		t.Errorf("changes of a base without a delta: %v", got)
	}
	was := l.Servers[3].NextDue
	l.Servers[3].NextDue = m + 5000
	if err := WriteLedger(string(d), l); err != nil {
		t.Fatal(err)
	}
	if got := changes(); len(got) != 1 || got[3].NextDue != m+5000 {
		t.Errorf("changes after server 3's: %+v", got)
	}
	// Server 3 back to what the base says, server 5 changed.
	l.Servers[3].NextDue, l.Servers[5].NextDue = was, m+7000
	if err := WriteLedger(string(d), l); err != nil {
		t.Fatal(err)
	}
	got := changes()
	if len(got) != 2 || got[3].NextDue != was || got[5].NextDue != m+7000 || got[5].URLHash != l.Servers[5].URLHash {
		t.Errorf("changes after server 3 went back and 5 changed: %+v", got)
	}
	if back, err := readBoth(t, string(d)); err != nil || !back.Equal(l) {
		t.Errorf("the ledger read back: %v", err)
	}
	// A new base (a server gone): the mark is not its.
	l.Servers = l.Servers[1:]
	if err := WriteLedger(string(d), l); err != nil {
		t.Fatal(err)
	}
	if ok, err := EachLedgerChange(string(d), mark, func(int, *LedgerServer) { t.Error("called for a record of another base") }); ok || err != nil {
		t.Errorf("EachLedgerChange of another base: ok %v, %v", ok, err)
	}
	if next, err := EachLedgerServer(string(d), func(*LedgerServer) {}); err != nil || next.Seq != mark.Seq+1 || next.Servers != n-1 {
		t.Errorf("mark of the new base: %+v, %v", next, err)
	}
	// A damaged delta is an error, not a ledger without changes.
	mark, _ = EachLedgerServer(string(d), func(*LedgerServer) {})
	l.Servers[0].NextDue++
	if err := WriteLedger(string(d), l); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(d.LedgerDelta())
	os.WriteFile(d.LedgerDelta(), flip(b, len(b)/2), 0o644)
	if ok, err := EachLedgerChange(string(d), mark, func(int, *LedgerServer) {}); ok || !errors.Is(err, ErrLedgerCorrupt) {
		t.Errorf("EachLedgerChange of a damaged delta: ok %v, %v", ok, err)
	}
	// The next write cannot keep the damaged delta's records: it writes
	// a new base.
	l.Servers[1].NextDue++
	if err := WriteLedger(string(d), l); err != nil {
		t.Fatal(err)
	}
	if next, err := EachLedgerServer(string(d), func(*LedgerServer) {}); err != nil || next.Seq != mark.Seq+1 || fileSize(d.LedgerDelta()) != -1 {
		t.Errorf("written over a damaged delta: mark %+v, %v, delta of %d bytes", next, err, fileSize(d.LedgerDelta()))
	}
}
