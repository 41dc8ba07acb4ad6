package site

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
	"plug.directory/prober/internal/testutil"
)

// compact writes the site's record of f as one new base, without a delta:
// what a publish that always rewrote state.bin whole would leave.
func compact(t *testing.T, f *fixture) {
	t.Helper()
	if err := durable.WriteFileAtomic(data.Dir(f.dir).SiteStore(), mustStoreFile(t, mustLoadStore(t, f.dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(deltaPath(f.dir)); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}

// mustLoadStore reads the site's record of the data directory dir.
func mustLoadStore(t *testing.T, dir string) *store {
	t.Helper()
	st, err := loadStore(dir, 0, 0)
	if err != nil || st == nil {
		t.Fatalf("read the site's record: %v", err)
	}
	return st
}

// mustStoreFile returns st as one state.bin.
func mustStoreFile(t *testing.T, st *store) []byte {
	t.Helper()
	enc, err := st.encode()
	if err != nil {
		t.Fatal(err)
	}
	return enc.file()
}

// clone returns a copy of f, its files and clock, in a directory of its
// own.
func (f *fixture) clone(t *testing.T) *fixture {
	t.Helper()
	g := fixtureIn(t, t.TempDir())
	testutil.CopyTree(t, filepath.Dir(f.dir), filepath.Dir(g.dir))
	g.journal, g.now = f.journal, f.now
	return g
}

// TestStoreDelta: a publish that renders a few servers appends their rows
// to state-delta.bin and leaves state.bin as it is; the record read back,
// base and delta, is the one a whole state.bin would hold, publish after
// publish (the same site as a twin whose record is compacted each time);
// a new list writes a new base and removes the delta; a delta of another
// base is not applied; a damaged delta is named and the site rebuilt.
func TestStoreDelta(t *testing.T) {
	t.Parallel()
	f, twin := newStandard(t), newStandard(t)
	f.MustPublish()
	twin.MustPublish()
	base, err := os.ReadFile(data.Dir(f.dir).SiteStore())
	if err != nil {
		t.Fatal(err)
	}
	logged := 0
	for k, srv := range []data.Server{srvWorking, srvKey, srvFailing} {
		for _, g := range []*fixture{f, twin} {
			g.now = g.now.Add(time.Duration(k+1) * time.Hour)
			g.results(result(srv, g.now.Add(-time.Minute), data.Failing, "HTTP 502"))
		}
		compact(t, twin)
		f.MustPublish()
		twin.MustPublish()
		now, err := os.ReadFile(data.Dir(f.dir).SiteStore())
		if err != nil || !bytes.Equal(now, base) {
			t.Fatalf("publish %d: state.bin rewritten (%v)", k, err)
		}
		delta, err := os.ReadFile(deltaPath(f.dir))
		if err != nil || len(delta)-logged >= len(base) {
			t.Fatalf("publish %d: a record of %d bytes for a base of %d (%v)", k, len(delta)-logged, len(base), err)
		}
		logged = len(delta)
		got := mustLoadStore(t, f.dir)
		compact(t, twin)
		want := mustLoadStore(t, twin.dir)
		if !sameRows(got, want) || !reflect.DeepEqual(got.Meta.Sums, want.Meta.Sums) {
			t.Errorf("publish %d: the record read from base and delta differs from a whole one", k)
		}
		if !reflect.DeepEqual(testutil.MustTree(t, f.out), testutil.MustTree(t, twin.out)) {
			t.Errorf("publish %d: another site than a twin whose record is whole", k)
		}
	}

	t.Run("new_list_new_base", func(t *testing.T) {
		g := f.clone(t)
		g.now = g.now.Add(time.Hour)
		g.writeServers(fixServers[:len(fixServers)-1])
		g.MustPublish()
		if _, err := os.Stat(deltaPath(g.dir)); !os.IsNotExist(err) {
			t.Errorf("a new list left the delta: %v", err)
		}
		if now, _ := os.ReadFile(data.Dir(g.dir).SiteStore()); bytes.Equal(now, base) {
			t.Error("a new list did not write a new base")
		}
	})

	t.Run("another_base_not_applied", func(t *testing.T) {
		// A crash between a new base and the removal of the delta.
		st := mustLoadStore(t, f.dir)
		st.all()[0].LastCheck = 1
		other, err := decodeText(string(mustStoreFile(t, st)))
		if err != nil {
			t.Fatal(err)
		}
		if err := other.applyLog(mustRead(t, deltaPath(f.dir))); err != nil {
			t.Fatal(err)
		}
		if other.all()[0].LastCheck != 1 || !other.log.fresh {
			t.Error("a delta of another base was applied")
		}
	})

	t.Run("damaged_delta_rebuilds", func(t *testing.T) {
		g := f.clone(t)
		want := testutil.MustTree(t, g.out)
		b := []byte(mustRead(t, deltaPath(g.dir)))
		for i := range b {
			c := bytes.Clone(b)
			c[i] ^= 0x10
			if err := os.WriteFile(deltaPath(g.dir), c, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := loadStore(g.dir, 0, 0); err == nil {
				t.Fatalf("byte %d flipped: the delta read", i)
			}
		}
		if st := g.MustPublish(); !st.Rebuilt || len(st.Bad) == 0 {
			t.Errorf("a damaged delta: %+v, want a rebuild that names it", st)
		}
		if !reflect.DeepEqual(testutil.MustTree(t, g.out), want) {
			t.Error("the rebuild made another site")
		}
	})
}

// mustRead returns the text of the file at path.
func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// logStore writes the base of a record of 3,000 rows in two parts under a
// data directory of its own, and returns the directory.
func logStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	st := newStore()
	rows, ids := make([]row, 3000), make([]string, 3000)
	for i := range rows {
		ids[i], rows[i] = fmt.Sprintf("s%05d", i), row{Rank: i + 1, status: statusIndex(data.Working), LastCheck: int64(i), Uptime7d: -1, Tools: -1}
	}
	st.setRows(rows, ids)
	st.sortOrder()
	st.Meta.Index = []indexPart{{First: "s00000", Rows: 1000, Sum: 1}, {First: "s01000", Rows: 2000, Sum: 2}}
	if err := durable.WriteFileAtomic(data.Dir(dir).SiteStore(), mustStoreFile(t, st), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// saveStore saves st under dir as a publish does, the rows touched given
// (nil: any).
func saveStore(t *testing.T, st *store, dir string, touched []int) {
	t.Helper()
	w := newWriter(dir)
	if err := st.save(w, dir, touched); err != nil {
		t.Fatal(err)
	}
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
}

// TestStoreLog: publish after publish, the record's log gains a record of
// what changed (rows, meta, the parts' hashes), the same bytes whether
// saved from the rows touched or from every row, and reads back as the
// record saved; nothing changed appends nothing; a record cut short by a
// kill reads as never written and is written over; a log past its share
// of the base is a new base.
func TestStoreLog(t *testing.T) {
	t.Parallel()
	a, b := logStore(t), logStore(t)
	base := mustRead(t, data.Dir(a).SiteStore())
	size := func(dir string) int64 {
		fi, err := os.Stat(deltaPath(dir))
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	for k, step := range []struct {
		name    string
		touched []int
		change  func(s *store)
		grows   bool
	}{
		{"rows_and_a_part", []int{3, 7}, func(s *store) { s.all()[3].LastCheck = 99; s.all()[7].setStatus(data.Failing); s.Meta.Index[1].Sum = 3 }, true},
		{"one_back_one_new_and_meta", []int{3, 5}, func(s *store) { s.all()[3].LastCheck = 3; s.all()[5].Tools = 2; s.Meta.ListBad = 4 }, true},
		{"touched_unchanged", []int{100, 200}, func(*store) {}, false},
		{"cut_short_then_written_over", []int{9}, func(s *store) { s.all()[9].Uptime7d = 9000 }, true},
	} {
		if step.name == "cut_short_then_written_over" {
			// A kill while a record was appended: part of one.
			for _, dir := range []string{a, b} {
				f, err := os.OpenFile(deltaPath(dir), os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.Write([]byte{40, 0, 0})
				f.Close()
			}
		}
		before := size(a)
		var want *store
		for _, dir := range []string{a, b} {
			st := mustLoadStore(t, dir)
			step.change(st)
			touched := step.touched
			if dir == b {
				touched = nil
			}
			saveStore(t, st, dir, touched)
			want = st
		}
		if got := mustRead(t, deltaPath(a)); got != mustRead(t, deltaPath(b)) {
			t.Fatalf("%d %s: the log saved from the rows touched differs from the one saved from every row", k, step.name)
		}
		if grew := size(a) - before; step.grows != (grew > 0) || grew > 512 {
			t.Errorf("%d %s: the log grew %d bytes", k, step.name, grew)
		}
		got := mustLoadStore(t, a)
		if !sameRows(got, want) || !reflect.DeepEqual(got.Meta, want.Meta) {
			t.Errorf("%d %s: the record read back is not the one saved", k, step.name)
		}
		if mustRead(t, data.Dir(a).SiteStore()) != base {
			t.Fatalf("%d %s: state.bin rewritten", k, step.name)
		}
	}
	st := mustLoadStore(t, a)
	for i := range 2000 {
		st.all()[i].LastCheck = -1
	}
	saveStore(t, st, a, seq(0, 2000))
	if _, err := os.Stat(deltaPath(a)); !os.IsNotExist(err) || mustRead(t, data.Dir(a).SiteStore()) == base {
		t.Errorf("a log past its share: no new base, or the log left (%v)", err)
	}
	if got := mustLoadStore(t, a); !sameRows(got, st) {
		t.Error("the new base read back is not the record saved")
	}
}

// TestRecordOfEarlierLayouts: a record of a layout before (state.bin v4
// and a delta v1, the parts in the JSON of their meta; state.bin v5 and a
// log v1, its rows as varints), as those builds wrote them, reads as it
// was written, and its next save writes a new base of this layout and
// removes the delta; a record whose parts do not cover its rows is
// damaged.
func TestRecordOfEarlierLayouts(t *testing.T) {
	t.Parallel()
	// v4 returns the record testdata/state-v4*.bin hold.
	v4 := func() *store {
		st := newStore()
		rows, ids := make([]row, 300), make([]string, 300)
		for i := range rows {
			ids[i], rows[i] = fmt.Sprintf("s%05d", i), row{Rank: i + 1, status: statusIndex(data.Working), Uptime7d: -1, Tools: -1}
		}
		st.setRows(rows, ids)
		st.all()[150].LastCheck = 7
		st.Meta.Index = []indexPart{{First: "s00000", Rows: 100, Sum: 1}, {First: "s00100", Rows: 200, Sum: 3}}
		return st
	}
	// v5 returns the record testdata/state-v5*.bin hold.
	v5 := func() *store {
		st := newStore()
		rows, ids := make([]row, 5), make([]string, 5)
		for i := range rows {
			ids[i] = fmt.Sprintf("s%05d", i)
			rows[i] = row{Rank: 5 - i, URLSum: uint64(i) * 0x9e3779b97f4a7c15, status: statusIndex(data.Working), LastCheck: 1764669617000 + int64(i),
				Uptime7d: 9950, Tools: int64(i), PlanNext: 1764673217000, Expires: 1764700000000, EffCad: 7200 * int64(i%2),
				protocol: protocolNumber("2025-11-25"), Speaks: i%2 == 0, Problems: int32(i % 3), HTMLSum: 11 + uint64(i), StripSum: 22 + uint64(i)}
		}
		rows[2].Paused, rows[2].status = true, statusIndex(data.Paused)
		rows[4].protocol, rows[4].Problems, rows[4].Tools, rows[4].Uptime7d = 0, 0, -1, -1
		rows[3].LastCheck, rows[3].protocol = 1764669999000, protocolNumber("2026-07-28")
		st.setRows(rows, ids)
		st.Meta.Index = []indexPart{{First: "s00000", Rows: 2, Sum: 1}, {First: "s00002", Rows: 3, Sum: 3}}
		st.Meta.ListBad = 2
		return st
	}
	for _, tc := range []struct {
		name, base, delta string // written by 59c5fe9's encode and save
		want              func() *store
	}{
		{"v4_and_delta_v1", "state-v4.bin", "state-v4-delta-v1.bin", v4},
		{"v5_and_log_v1", "state-v5.bin", "state-v5-log-v1.bin", v5},
		// written by 78e8aeb's encode and save: v6's one checksum, a log
		// of this layout setting row 1's last check
		{"v6_and_log_v2", "state-v6.bin", "state-v6-log-v2.bin", v5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "site"), 0o755); err != nil {
				t.Fatal(err)
			}
			for from, to := range map[string]string{tc.base: data.Dir(dir).SiteStore(), tc.delta: deltaPath(dir)} {
				if err := os.WriteFile(to, []byte(mustRead(t, filepath.Join("testdata", from))), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want := tc.want()
			got := mustLoadStore(t, dir)
			if !reflect.DeepEqual(got.Meta.Index, want.Meta.Index) || !sameRows(got, want) || got.Meta.ListBad != want.Meta.ListBad {
				t.Fatalf("read as parts %+v, rows %+v", got.Meta.Index, got.all())
			}
			got.all()[1].LastCheck = 8
			saveStore(t, got, dir, []int{1})
			if b := mustRead(t, data.Dir(dir).SiteStore()); !strings.HasPrefix(b, storeMagic) {
				t.Errorf("saved over a %s base: state.bin starts %q", tc.name, b[:min(len(b), len(storeMagic))])
			}
			if _, err := os.Stat(deltaPath(dir)); !os.IsNotExist(err) {
				t.Errorf("saved over a %s base: the delta left (%v)", tc.name, err)
			}
			if again := mustLoadStore(t, dir); !sameRows(again, got) || !reflect.DeepEqual(again.Meta.Index, want.Meta.Index) {
				t.Errorf("the new base read back: parts %+v", again.Meta.Index)
			}
		})
	}
	st := v4()
	st.Meta.Index[1].Rows = 199
	if _, err := decodeText(string(mustStoreFile(t, st))); !errors.Is(err, errCorrupt) {
		t.Errorf("parts that do not cover the rows: %v", err)
	}
}

// sameRows reports whether a and b have the same rows, ids and all:
// where a row's id is in its store's text is the store's own.
func sameRows(a, b *store) bool {
	return slices.EqualFunc(a.all(), b.all(), func(x, y row) bool {
		idX, idY := a.id(&x), b.id(&y)
		x.idAt, x.idLen, y.idAt, y.idLen = 0, 0, 0, 0
		return idX == idY && x == y
	})
}

// TestStoreReadsItsBaseAgain: a record loaded keeps its rows' ids, not
// the text of its file (the numbers of a row a save compares are read
// again from the file); a file replaced between the load and the save,
// which no publish does (the site's lock) but a hand may, is not taken
// for the base: the save writes a new one, and the record reads back as
// saved.
func TestStoreReadsItsBaseAgain(t *testing.T) {
	t.Parallel()
	dir := logStore(t)
	st := mustLoadStore(t, dir)
	if len(st.ids) != 3000*len("s00000") {
		t.Errorf("the record holds %d bytes of text for %d of ids", len(st.ids), 3000*len("s00000"))
	}
	other := mustLoadStore(t, dir)
	other.all()[5].LastCheck = -5
	if err := durable.WriteFileAtomic(data.Dir(dir).SiteStore(), mustStoreFile(t, other), 0o644); err != nil {
		t.Fatal(err)
	}
	st.all()[9].LastCheck = 99
	saveStore(t, st, dir, []int{9})
	if _, err := os.Stat(deltaPath(dir)); !os.IsNotExist(err) {
		t.Errorf("a log written over a base other than the one read (%v)", err)
	}
	if got := mustLoadStore(t, dir); !sameRows(got, st) {
		t.Error("the record read back is not the one saved")
	}
}
