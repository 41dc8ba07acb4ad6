package site

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/testutil"
)

// indexServers returns n servers, ids s00000 on, ranked backwards so that
// rank order is not id order.
func indexServers(n int) []data.Server {
	servers := make([]data.Server, n)
	for i := range servers {
		id := fmt.Sprintf("s%05d", i)
		servers[i] = data.Server{ID: id, Rank: n - i, URL: "https://h" + id + ".example.com/mcp", Added: fixNow.Add(-48 * time.Hour)}
	}
	return servers
}

// checkIndex asserts that the published index composes (ReadIndex: every
// part the head names is there, whole) into the rows of ids, in id order,
// in parts of at most 4*indexPartRows rows and, but the last, at least
// indexPartRows/2; and that index/ holds no file the head does not name.
// It returns the paths of the parts.
func checkIndex(t *testing.T, out string, ids []string) []string {
	t.Helper()
	idx, err := ReadIndex(out)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(idx.Rows))
	for i, r := range idx.Rows {
		got[i] = r.ID
	}
	if want := slices.Sorted(slices.Values(ids)); !slices.Equal(got, want) {
		t.Errorf("the parts compose to %d rows, want the %d ids in id order", len(got), len(want))
	}
	var paths []string
	for k, p := range idx.Parts {
		if p.Rows > 4*indexPartRows || p.Rows < indexPartRows/2 && k < len(idx.Parts)-1 {
			t.Errorf("part %d of %d has %d rows", k, len(idx.Parts), p.Rows)
		}
		paths = append(paths, p.Path)
	}
	es, _ := os.ReadDir(filepath.Join(out, indexDir))
	if len(es) != len(paths) {
		t.Errorf("index/ holds %d files, the head names %d parts", len(es), len(paths))
	}
	return paths
}

// TestPublishIndexParts: index.json is a head naming parts of rows by id
// range; a minute rewrites only the parts of the servers whose rows
// changed and the head, removes the parts replaced, and a rebuild from
// nothing writes the same head and parts as the minutes before.
func TestPublishIndexParts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	servers := indexServers(1500)
	f.writeServers(servers)
	cfg := f.config()
	cfg.NoHTML = true
	publish := func() Stats {
		t.Helper()
		st, err := Publish(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	ids := func() []string {
		var ids []string
		for _, s := range servers {
			ids = append(ids, s.ID)
		}
		return ids
	}
	publish()
	parts := checkIndex(t, f.out, ids())
	if len(parts) < 1500/(4*indexPartRows) || len(parts) > 1500/(indexPartRows/2) {
		t.Fatalf("%d parts for 1,500 rows", len(parts))
	}
	partOf := func(id string) string {
		idx, _ := ReadIndex(f.out)
		for _, p := range idx.Parts {
			if p.First <= id && id <= p.Last {
				return p.Path
			}
		}
		t.Fatalf("%s in no part", id)
		return ""
	}

	for _, tc := range []struct {
		name   string
		change func() []string // the ids whose rows change
		most   int             // parts that may change
	}{
		{"three_checked", func() []string {
			f.now = f.now.Add(time.Minute)
			var ids []string
			for _, i := range []int{7, 700, 1400} {
				f.results(result(servers[i], f.now.Add(-30*time.Second), data.Working, ""))
				ids = append(ids, servers[i].ID)
			}
			return ids
		}, 3},
		{"nothing_new", func() []string { return nil }, 0},
		{"one_listed_one_removed", func() []string {
			gone := servers[400].ID
			servers = slices.Delete(servers, 400, 401)
			servers = append(servers, data.Server{ID: "s00900a", Rank: 2000, URL: "https://new.example.com/mcp", Added: fixNow})
			f.writeServers(servers)
			return []string{gone, "s00900a"}
		}, 4}, // each in its part, or moving a bound between two
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := inodes(t, f.out)
			changed := tc.change()
			var around []string
			for _, id := range changed {
				if !strings.HasSuffix(id, "a") {
					around = append(around, partOf(id))
				}
			}
			publish()
			parts := checkIndex(t, f.out, ids())
			after := inodes(t, f.out)
			var written []string
			for _, rel := range replaced(before, after) {
				if strings.HasPrefix(rel, "index/") {
					written = append(written, rel)
				}
			}
			if len(written) > tc.most || len(changed) > 0 && len(written) == 0 {
				t.Errorf("%d parts written, want 1 to %d", len(written), tc.most)
			}
			if _, ok := after["index.json"]; !ok || len(changed) == 0 && before["index.json"] != after["index.json"] {
				t.Error("index.json replaced though nothing changed")
			}
			for _, p := range around {
				if slices.Contains(parts, p) {
					t.Errorf("%s, the part of a changed row, is still named", p)
				}
			}
		})
	}

	t.Run("rebuild_writes_the_same_parts", func(t *testing.T) {
		want := testutil.MustTree(t, f.out)
		os.RemoveAll(f.out)
		os.RemoveAll(filepath.Join(f.dir, "site"))
		if st := publish(); !st.Rebuilt {
			t.Fatal("not a rebuild")
		}
		got := testutil.MustTree(t, f.out)
		for rel, b := range want {
			if (rel == "index.json" || strings.HasPrefix(rel, "index/")) && !bytes.Equal(got[rel], b) {
				t.Errorf("%s differs after a rebuild", rel)
			}
		}
		if !maps.EqualFunc(got, want, bytes.Equal) {
			t.Errorf("a rebuild wrote %d files, the minutes before %d", len(got), len(want))
		}
	})

	// A publish whose flush fails, as a crash before it would, has written
	// its new parts but moved no head: the head still names parts that
	// are all there, and the next publish removes those it never named.
	t.Run("failed_flush_leaves_a_whole_index", func(t *testing.T) {
		f.now = f.now.Add(time.Minute)
		f.results(result(servers[3], f.now.Add(-30*time.Second), data.Failing, "HTTP 502"))
		c := flushCounter{fail: errors.New("disk gone")}
		failing := cfg
		c.install(&failing)
		if _, err := Publish(context.Background(), failing); !errors.Is(err, c.fail) {
			t.Fatalf("publish with a failing flush: %v", err)
		}
		if _, err := ReadIndex(f.out); err != nil {
			t.Fatalf("after a failed flush: %v", err)
		}
		f.now = f.now.Add(time.Minute)
		f.results(result(servers[3], f.now.Add(-30*time.Second), data.Working, ""))
		publish()
		checkIndex(t, f.out, ids())
	})
}

// TestIndexPartsReadBack: a part removed from the output, and one with a
// byte flipped, are noticed by the publishes that read back a window of
// the parts, though none of their rows changes: each is written again,
// named in the log, within the minutes the window takes to pass over every
// part; a part read back whole is not written again.
func TestIndexPartsReadBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	servers := indexServers(1500)
	f.writeServers(servers)
	var logs bytes.Buffer
	cfg := f.config()
	cfg.NoHTML, cfg.partsReadBack = true, 4
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	if _, err := Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	idx, err := ReadIndex(f.out)
	if err != nil {
		t.Fatal(err)
	}
	want := testutil.MustTree(t, f.out)
	n := len(idx.Parts)
	gone := filepath.Join(f.out, filepath.FromSlash(idx.Parts[2].Path))
	flipped := filepath.Join(f.out, filepath.FromSlash(idx.Parts[n-3].Path))
	mustRemove(t, gone)
	flipMiddle(t, flipped)
	if _, err := ReadIndex(f.out); err == nil {
		t.Fatal("the index composes with a part removed and one damaged")
	}

	minutes := (n + 3) / 4
	healed := 0
	for m := 1; m <= minutes && healed == 0; m++ {
		f.now = f.now.Add(time.Minute)
		if _, err := Publish(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadIndex(f.out); err == nil {
			healed = m
		}
	}
	if healed == 0 {
		t.Fatalf("the index does not compose after %d minutes, the window's round over its %d parts", minutes, n)
	}
	t.Logf("%d parts, composing again after %d of at most %d minutes", n, healed, minutes)
	got := testutil.MustTree(t, f.out)
	for rel, b := range want {
		if strings.HasPrefix(rel, "index/") && !bytes.Equal(got[rel], b) {
			t.Errorf("%s is not as it was written", rel)
		}
	}
	for _, path := range []string{gone, flipped} {
		if !strings.Contains(logs.String(), "path="+path) {
			t.Errorf("the log does not name %s:\n%s", path, logs.String())
		}
	}

	// Every part read back whole: a round of minutes writes none.
	before := inodes(t, f.out)
	for range minutes {
		f.now = f.now.Add(time.Minute)
		if _, err := Publish(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
	}
	for _, rel := range replaced(before, inodes(t, f.out)) {
		if strings.HasPrefix(rel, "index/") {
			t.Errorf("%s written again, though it read back whole", rel)
		}
	}
}

// TestLayoutPartsDependsOnTheIdsAlone: where parts start is a function of
// the ids, so a record's bounds need no history; one id more moves at
// most the bounds next to it.
func TestLayoutPartsDependsOnTheIdsAlone(t *testing.T) {
	t.Parallel()
	var ids []string
	for _, s := range indexServers(5000) {
		ids = append(ids, s.ID)
	}
	firsts := func() []string {
		st := storeOf(ids)
		var out []string
		for _, s := range layoutParts(st, nil, true) {
			out = append(out, st.id(&st.all()[s.lo]))
		}
		return out
	}
	before := firsts()
	ids = slices.Insert(ids, 2500, "s02499a")
	after := firsts()
	moved := 0
	for _, id := range after {
		if !slices.Contains(before, id) {
			moved++
		}
	}
	if moved > 2 || len(after) < len(before) || len(after) > len(before)+1 {
		t.Errorf("one id more: %d parts of %d start elsewhere, %d parts now", moved, len(before), len(after))
	}
}

// TestLayoutPartsFromTheRecord: with the rows the record's parts were laid
// out over, the parts taken from the record are those the ids lay out,
// dirty where a candidate is; a record that does not cover the rows is
// laid out again.
func TestLayoutPartsFromTheRecord(t *testing.T) {
	t.Parallel()
	var ids []string
	for _, s := range indexServers(5000) {
		ids = append(ids, s.ID)
	}
	st := storeOf(ids)
	laid := layoutParts(st, nil, true)
	for k, s := range laid {
		st.Meta.Index = append(st.Meta.Index, indexPart{First: ids[s.lo], Rows: s.hi - s.lo, Sum: uint64(k + 1)})
	}
	cand := map[string]bool{ids[0]: true, ids[2600]: true, "gone": true}
	want := layoutParts(st, cand, true)
	if got := layoutParts(st, cand, false); !slices.Equal(got, want) {
		t.Errorf("from the record: %d parts, laid out: %d, or others", len(got), len(want))
	}
	dirty := 0
	for _, s := range want {
		if s.dirty {
			dirty++
		}
	}
	if dirty != 2 {
		t.Errorf("%d parts dirty, want those of the 2 candidates listed", dirty)
	}
	index := st.Meta.Index
	st = storeOf(slices.Insert(ids, 2500, "s02499a"))
	st.Meta.Index = index
	if recordedParts(st) != nil {
		t.Error("a record that does not cover the rows was taken")
	}
}

// storeOf returns a store of a row for each of ids, in their order, and
// nothing else.
func storeOf(ids []string) *store {
	st := newStore()
	st.setRows(make([]row, len(ids)), ids)
	return st
}
