package site

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
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
