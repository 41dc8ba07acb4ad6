package site

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
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
	st, err := loadStore(dir)
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

// TestStoreDelta: a publish that renders a few servers writes their rows
// in state-delta.bin and leaves state.bin as it is; the record read back,
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
		if err != nil || len(delta) >= len(base) {
			t.Fatalf("publish %d: delta of %d bytes for a base of %d (%v)", k, len(delta), len(base), err)
		}
		got := mustLoadStore(t, f.dir)
		compact(t, twin)
		want := mustLoadStore(t, twin.dir)
		if !reflect.DeepEqual(got.Rows, want.Rows) || !reflect.DeepEqual(got.Meta.Sums, want.Meta.Sums) {
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
		st.Rows[0].LastCheck = 1
		other, err := decodeStore(string(mustStoreFile(t, st)), durable.CRCResidue)
		if err != nil {
			t.Fatal(err)
		}
		if err := other.applyDelta(mustRead(t, deltaPath(f.dir)), durable.CRCResidue); err != nil {
			t.Fatal(err)
		}
		if other.Rows[0].LastCheck != 1 {
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
			if _, err := loadStore(g.dir); err == nil {
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

// TestDeltaOfTouchedRows: the delta a publish writes from the rows it
// touched and those of the delta it read is, byte for byte, the one a
// comparison of every row with the base finds: a row of the delta read
// that is the base's again leaves it, one changed since stays in it, and
// too many rows changed is a new base either way.
func TestDeltaOfTouchedRows(t *testing.T) {
	t.Parallel()
	st := newStore()
	for i := range 3000 {
		st.Rows = append(st.Rows, row{ID: fmt.Sprintf("s%05d", i), Rank: i + 1, Status: data.Working, LastCheck: int64(i), Uptime7d: -1, Tools: -1})
	}
	st.sortOrder()
	reload := func(t *testing.T, file, delta []byte) *store {
		t.Helper()
		s, err := decodeStore(string(file), durable.CRCResidue)
		if err != nil {
			t.Fatal(err)
		}
		if delta != nil {
			s.deltaText = string(delta)
			if err := s.applyDelta(string(delta), durable.CRCResidue); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	base := mustStoreFile(t, st)
	// The delta read: rows 3, 7 and 9 changed.
	s := reload(t, base, nil)
	for _, i := range []int{3, 7, 9} {
		s.Rows[i].LastCheck += 1000
	}
	first, _, ok, err := s.deltaOf([]int{3, 7, 9})
	if err != nil || !ok {
		t.Fatalf("first delta: %v, %v", ok, err)
	}
	for _, tc := range []struct {
		name    string
		touched []int
		change  func(s *store)
		wantOK  bool
	}{
		{"one_back_one_new", []int{3, 5}, func(s *store) { s.Rows[3].LastCheck -= 1000; s.Rows[5].Status = data.Failing }, true},
		{"touched_unchanged", []int{100, 200}, func(*store) {}, true},
		{"meta_only", []int{}, func(s *store) { s.Meta.ListBad = 4 }, true},
		{"all_back", []int{3, 7, 9}, func(s *store) {
			for _, i := range []int{3, 7, 9} {
				s.Rows[i].LastCheck -= 1000
			}
		}, true},
		{"too_many", seq(0, 400), func(s *store) {
			for i := range 400 {
				s.Rows[i].Tools = 5
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := reload(t, base, first)
			tc.change(s)
			got, gotEmpty, gotOK, err := s.deltaOf(tc.touched)
			if err != nil {
				t.Fatal(err)
			}
			enc, err := s.encode()
			if err != nil {
				t.Fatal(err)
			}
			want, wantEmpty, wantOK := s.delta(enc)
			if gotOK != tc.wantOK || wantOK != tc.wantOK || gotEmpty != wantEmpty || !bytes.Equal(got, want) {
				t.Fatalf("from the rows touched: %d bytes, empty %v, ok %v; from every row: %d bytes, empty %v, ok %v",
					len(got), gotEmpty, gotOK, len(want), wantEmpty, wantOK)
			}
			if gotOK && !gotEmpty {
				back := reload(t, base, got)
				if !reflect.DeepEqual(back.Rows, s.Rows) || !reflect.DeepEqual(back.Meta, s.Meta) {
					t.Error("the record read back from base and delta is not the one saved")
				}
			}
		})
	}
}

// seq returns lo, lo+1, ..., hi-1.
func seq(lo, hi int) []int {
	s := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		s = append(s, i)
	}
	return s
}

// TestRecordOfPartsV4: a record of the layout before (state.bin v4 and a
// delta v1, the parts in the JSON of their meta) reads as it was written,
// and its next save writes the parts in binary; a record whose parts do
// not cover its rows is damaged.
func TestRecordOfPartsV4(t *testing.T) {
	t.Parallel()
	st := newStore()
	for i := range 300 {
		st.Rows = append(st.Rows, row{ID: fmt.Sprintf("s%05d", i), Rank: i + 1, Status: data.Working, Uptime7d: -1, Tools: -1})
	}
	st.sortOrder()
	st.Meta.Index = []indexPart{{First: "s00000", Rows: 100, Sum: 1}, {First: "s00100", Rows: 200, Sum: 2}}
	// legacy returns meta's JSON with the parts in it, as v4 wrote it.
	legacy := func(m meta) string {
		b, err := json.Marshal(struct {
			meta
			Index []indexPart `json:"index,omitempty"`
		}{m, m.Index})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	enc, err := st.encode()
	if err != nil {
		t.Fatal(err)
	}
	e := durable.NewEncoder(storeMagicV4, 0)
	e.String(legacy(st.Meta))
	e.Uvarint(uint64(len(st.Rows)))
	e.Raw(enc.rows)
	e.Raw(enc.order)
	v4 := e.Finish()
	got, err := decodeStore(string(v4), durable.CRCResidue)
	if err != nil || !reflect.DeepEqual(got.Meta.Index, st.Meta.Index) || !reflect.DeepEqual(got.Rows, st.Rows) {
		t.Fatalf("v4 read: %v, parts %+v", err, got.Meta.Index)
	}
	// A delta v1 over it: a row and the sum of a part changed.
	st.Rows[150].LastCheck = 7
	st.Meta.Index[1].Sum = 3
	e = durable.NewEncoder(deltaMagicV1, 0)
	e.Raw(v4[len(v4)-4:])
	e.String(legacy(st.Meta))
	e.Uvarint(1)
	e.Uvarint(150)
	encodeRow(e, &st.Rows[150])
	if err := got.applyDelta(string(e.Finish()), durable.CRCResidue); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Meta.Index, st.Meta.Index) || got.Rows[150].LastCheck != 7 {
		t.Fatalf("v1 delta read: parts %+v", got.Meta.Index)
	}
	again, _, ok, err := got.deltaOf([]int{150})
	if err != nil || !ok || !strings.HasPrefix(string(again), deltaMagic) {
		t.Fatalf("saved over a v4 base: ok %v, %v", ok, err)
	}
	if err := got.applyDelta(string(again), durable.CRCResidue); err != nil || !reflect.DeepEqual(got.Meta.Index, st.Meta.Index) {
		t.Fatalf("v2 delta over a v4 base: parts %+v, %v", got.Meta.Index, err)
	}
	if strings.Contains(string(again), `"index"`) {
		t.Error("the new delta has the parts in its meta's JSON")
	}
	st.Meta.Index[1].Rows = 199
	if _, err := decodeStore(string(mustStoreFile(t, st)), durable.CRCResidue); !errors.Is(err, errCorrupt) {
		t.Errorf("parts that do not cover the rows: %v", err)
	}
}
