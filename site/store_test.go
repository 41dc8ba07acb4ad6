package site

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
	"plug.directory/prober/internal/testutil"
)

// TestStore: the site's record round-trips; every flipped byte is caught
// by its checksum, never a panic nor a record of another server; a publish
// that finds it damaged names it and rebuilds the same site.
func TestStore(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	f.MustPublish()
	want := testutil.MustTree(t, f.out)
	path := data.Dir(f.dir).SiteStore()
	text := mustRead(t, path)
	st, err := decodeText(text)
	if err != nil || len(st.all()) != len(fixServers) {
		t.Fatalf("decode: %v; want %d rows", err, len(fixServers))
	}
	again, err := st.encode()
	if err != nil || string(again.file()) != text {
		t.Errorf("encode of the decoded store differs (%v)", err)
	}
	t.Run("every_flip_caught", func(t *testing.T) {
		n := 300
		if testing.Short() {
			n = 50
		}
		rng := rand.New(rand.NewPCG(13, 4))
		for range n {
			b := []byte(text)
			i := rng.IntN(len(b))
			b[i] ^= byte(1 + rng.IntN(255))
			if _, err := decodeText(string(b)); err == nil {
				t.Fatalf("byte %d flipped: decoded without an error", i)
			}
		}
	})
	t.Run("every_cut_caught", func(t *testing.T) {
		// A file cut short at any length (a disk that lost its tail) is
		// damaged, never rows, a panic or an allocation of what it claims.
		for n := range len(text) {
			if _, err := decodeText(text[:n]); !errors.Is(err, errCorrupt) {
				t.Fatalf("cut to %d of %d bytes: %v; want it named corrupt", n, len(text), err)
			}
		}
	})
	for _, tc := range []struct {
		name string
		at   int // the byte flipped
		want string
	}{
		{"damaged_store_named_and_site_rebuilt", len(text) / 2, ": corrupt site state: checksum mismatch"},
		// The rows' numbers, after the head: the window of blocks a
		// publish checks finds a byte changed in any of them.
		{"damaged_block_found_as_read_and_site_rebuilt", len(text) - rowWidth/2, ": corrupt site state: block 0 (rows 0 to 6): checksum mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := []byte(text)
			b[tc.at] ^= 0x20
			os.WriteFile(path, b, 0o644)
			got := f.MustPublish()
			if !got.Rebuilt || len(got.Bad) != 1 || !strings.Contains(got.Bad[0].Error(), path+tc.want) {
				t.Errorf("stats %+v; want a rebuild naming %s%s", got, path, tc.want)
			}
			if after := testutil.MustTree(t, f.out); !reflect.DeepEqual(after, want) {
				t.Errorf("rebuilt site differs from the one published before")
			}
		})
	}
}

// TestPublishRemovesTemporaryFilesOfAKilledPublish: a publish killed
// part-way leaves its mark and temporary files in the output; the next
// publish removes them (a site build would ship them) and the site is as
// before.
func TestPublishRemovesTemporaryFilesOfAKilledPublish(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	f.MustPublish()
	want := testutil.MustTree(t, f.out)
	if _, err := os.Stat(unfinishedPath(f.dir)); !os.IsNotExist(err) {
		t.Fatalf("a publish that ended left its mark: %v", err)
	}
	// What a kill leaves: the mark of the publish begun, and temporary
	// files of renames it never made.
	if _, err := beginPublish(f.dir, f.out); err != nil {
		t.Fatal(err)
	}
	left := []string{filepath.Join(f.out, "servers", ".s00001.json.tmp-123"), filepath.Join(f.out, ".index.json.tmp-9")}
	for _, p := range left {
		if err := os.WriteFile(p, []byte("{half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f.MustPublish()
	if got := testutil.MustTree(t, f.out); !reflect.DeepEqual(got, want) {
		var extra []string
		for rel := range got {
			if _, ok := want[rel]; !ok {
				extra = append(extra, rel)
			}
		}
		t.Errorf("after the next publish, files not published before: %v", extra)
	}
	if _, err := os.Stat(unfinishedPath(f.dir)); !os.IsNotExist(err) {
		t.Errorf("mark left after the publish ended: %v", err)
	}
}

// TestRowHoldsNoPointer: a row holds no string, slice, map or pointer. The
// collector follows each pointer of each row at every cycle of a publish,
// a million rows at a million servers: an id, a status and a version as
// strings made a full collection of a million rows 28 ms of CPU on one
// core, 1 without.
func TestRowHoldsNoPointer(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[row]()
	for i := range typ.NumField() {
		switch f := typ.Field(i); f.Type.Kind() {
		case reflect.Bool, reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint8, reflect.Uint32, reflect.Uint64:
		default:
			t.Errorf("row.%s is a %s", f.Name, f.Type)
		}
	}
}

// TestPublishWritesOverPartsAKilledPublishLeft: index parts not named yet
// are created in place, with no temporary file or rename (writer.create);
// a publish killed while it wrote them leaves them half written under
// their names. The next publish writes whole those it makes again and
// removes the others, and its site is the one a publish that was never
// killed makes, the files its servers' results change included (rule P3).
func TestPublishWritesOverPartsAKilledPublishLeft(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	f.MustPublish()
	f.now = f.now.Add(time.Minute)
	f.results(result(srvWorking, f.now.Add(-30*time.Second), data.Failing, "HTTP 502"))
	parts := func(out string) map[string]bool {
		names := map[string]bool{}
		es, err := os.ReadDir(filepath.Join(out, indexDir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			names[e.Name()] = true
		}
		return names
	}
	before := parts(f.out)

	// The same minute, never killed, counting the renames into index/.
	root := filepath.Join(t.TempDir(), "unkilled")
	testutil.CopyTree(t, filepath.Dir(f.dir), root)
	g := fixtureIn(t, root)
	g.now, g.journal = f.now, f.journal
	cfg := g.config()
	var renamed atomic.Int64
	cfg.calls.Rename = func(from, to string) error {
		if filepath.Base(filepath.Dir(to)) == indexDir {
			renamed.Add(1)
		}
		return os.Rename(from, to)
	}
	if _, err := Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	want := testutil.MustTree(t, g.out)
	var made []string
	for name := range parts(g.out) {
		if !before[name] {
			made = append(made, name)
		}
	}
	if len(made) == 0 {
		t.Fatal("the new result changed no part")
	}
	if n := renamed.Load(); n != 0 {
		t.Errorf("%d parts renamed into index/; want each of the %d new ones created in place", n, len(made))
	}

	// What a kill while the parts were written leaves: the mark, each new
	// part half written, and one the next publish does not make.
	if _, err := beginPublish(f.dir, f.out); err != nil {
		t.Fatal(err)
	}
	for _, name := range append(made, partName(0xdead)+".json") {
		if err := os.WriteFile(filepath.Join(f.out, indexDir, name), []byte(`{"rows":[`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f.MustPublish()
	got := testutil.MustTree(t, f.out)
	for rel, b := range want {
		if !bytes.Equal(got[rel], b) {
			t.Errorf("%s differs from the publish never killed: %.80q", rel, got[rel])
		}
	}
	for rel := range got {
		if _, ok := want[rel]; !ok {
			t.Errorf("%s left, not in the site of the publish never killed", rel)
		}
	}
}

// TestStoreRowsOutOfRange: a record whose checksum holds but whose rows
// say what no encode writes (a status not listed, an id past the ids, a
// protocol version not in the table, a rank order past the rows) is
// damaged, named by what is wrong, never read as rows or a panic.
func TestStoreRowsOutOfRange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, want string
		rows       func(st *store)   // spoils the rows before they are encoded
		bytes      func(rows []byte) // spoils their bytes (rowsSection) after
	}{
		{"status", "bad row", func(st *store) { st.all()[1].status = 0x7f }, nil},
		{"order", "bad order", func(st *store) { st.Order[2] = 3 }, nil},
		{"id_end", "bad row", nil, func(rows []byte) { binary.LittleEndian.PutUint32(rows[len(rows)-3*headWidth+4:], 1<<20) }},
		{"version", "bad row", nil, func(rows []byte) { binary.LittleEndian.PutUint32(rows[len(rows)-3*(headWidth-4):], 2) }},
		{"facts_status", "bad row", nil, func(rows []byte) { rows[len(rows)-1] = 0x0f }},
		{"facts_not_numbers", "row 0: its numbers are not its facts", nil, func(rows []byte) { rows[len(rows)-3] ^= 0x01 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := storeOf([]string{"alpha", "bravo", "charlie"})
			st.all()[0].protocol = protocolNumber("2025-11-25")
			st.sortOrder()
			if tc.rows != nil {
				tc.rows(st)
			}
			enc, err := st.encode()
			if err != nil {
				t.Fatal(err)
			}
			if tc.bytes != nil {
				tc.bytes(enc.rows)
			}
			b := enc.file()
			if _, err := decodeText(string(b)); !errors.Is(err, errCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("decoded with %v; want %q", err, tc.want)
			}
		})
	}
}

// decodeText reads the record of the text of a state.bin, as loadStore
// reads its file, and then decodes every row: damage in any block of the
// rows' numbers is found.
func decodeText(text string) (*store, error) {
	st, err := readStore(strings.NewReader(text), int64(len(text)), math.MaxInt64, 0)
	if err == nil {
		err = st.loadAll()
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

// FuzzReadStore: any bytes of a head after v7's magic and its length,
// their checksum made right, and any rows' numbers after it, read as a
// record or as an error wrapping errCorrupt, never a panic; a record read
// encodes to a file that reads back as the same rows.
func FuzzReadStore(f *testing.F) {
	st := storeOf([]string{"alpha", "bravo", "charlie"})
	st.all()[0].protocol, st.all()[2].Problems = protocolNumber("2025-11-25"), -1
	st.sortOrder()
	st.Meta.Index = []indexPart{{First: "alpha", Rows: 3, Sum: 7}}
	enc, err := st.encode()
	if err != nil {
		f.Fatal(err)
	}
	file := enc.file()
	headLen := int(le64(file[len(storeMagic):]))
	f.Add(file[len(storeMagic)+8:headLen-4], file[headLen:])
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, body, nums []byte) {
		e := durable.NewEncoder(storeMagic, 8+len(body)+4)
		e.Uint64(uint64(len(storeMagic) + 8 + len(body) + 4))
		e.Raw(body)
		text := string(e.Finish()) + string(nums)
		got, err := decodeText(text)
		if err != nil {
			if !errors.Is(err, errCorrupt) {
				t.Fatalf("an error not named corrupt: %v", err)
			}
			return
		}
		again, err := got.encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeText(string(again.file()))
		if err != nil || !sameRows(back, got) {
			t.Fatalf("a record read encodes to a file that reads back otherwise: %v", err)
		}
	})
}

// all decodes every row of s and returns them, for a test to read or
// change.
func (s *store) all() []row {
	if err := s.loadAll(); err != nil {
		panic(err)
	}
	return s.rows
}

// TestStoreBlockDamagedPastReading: a block of the record's rows' numbers
// damaged where the publish's window of blocks did not look is found when
// a publish reads it for a row it renders: that publish fails naming
// state.bin and the block, and moves nothing into place; the next one
// rebuilds the site, which is the site a record never damaged publishes.
func TestStoreBlockDamagedPastReading(t *testing.T) {
	t.Parallel()
	// Servers enough for two blocks, the second of servers never checked
	// (no row of it is due a minute later); one of them is checked.
	servers := slices.Clone(fixServers)
	for i := range 2 * rowsBlock {
		servers = append(servers, data.Server{ID: fmt.Sprintf("zulu%02d", i), Rank: 100 + i, URL: fmt.Sprintf("https://zulu%02d.example.com/mcp", i), Added: fixNow.Add(-time.Hour)})
	}
	checked := servers[len(servers)-2]
	damaged, twin := newStandard(t), newStandard(t)
	for _, f := range []*fixture{damaged, twin} {
		f.writeServers(servers)
		f.MustPublish()
		f.now = f.now.Add(time.Minute)
		f.results(result(checked, f.now.Add(-30*time.Second), data.Working, ""))
	}
	twin.MustPublish()
	want := testutil.MustTree(t, twin.out)

	path := data.Dir(damaged.dir).SiteStore()
	b := []byte(mustRead(t, path))
	numsAt := int(binary.LittleEndian.Uint64(b[len(storeMagic):]))
	k := len(servers) - 2          // the row checked, in the second block
	b[numsAt+k*rowWidth+8] ^= 0x40 // its address hash
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	before := testutil.MustTree(t, damaged.out)
	cfg := damaged.config()
	cfg.blocksChecked = -1
	_, err := Publish(context.Background(), cfg)
	if !errors.Is(err, errCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("%s: corrupt site state: block 2 (rows 64 to 70): checksum mismatch; the next publish rebuilds the site", path)) {
		t.Fatalf("publish over a damaged block: %v; want the block named", err)
	}
	after := testutil.MustTree(t, damaged.out)
	for rel := range after {
		if durable.IsTempName(filepath.Base(rel)) {
			delete(after, rel) // the next publish removes them (beginPublish)
		}
	}
	if !reflect.DeepEqual(after, before) {
		t.Error("the publish that found the damage moved files into place")
	}
	if why, err := rebuildRequested(damaged.dir); err != nil || !strings.Contains(why, "block 2") {
		t.Errorf("rebuild request %q, %v; want the block named", why, err)
	}
	if st := damaged.MustPublish(); !st.Rebuilt {
		t.Fatalf("the publish after: %+v; want a rebuild", st)
	}
	if got := testutil.MustTree(t, damaged.out); !reflect.DeepEqual(got, want) {
		for rel := range want {
			if !bytes.Equal(got[rel], want[rel]) {
				t.Errorf("%s differs from the site of a record never damaged", rel)
			}
		}
	}
}

// TestStoreBlocksCheckedInTurn: a publish checks a window of blocks of the
// record's rows' numbers beyond those it reads, which moves with the
// minute: a block damaged in rows no publish reads is found, named,
// within the minutes the windows take to pass over every block, from
// whatever minute they start; a record read with no window is read, its
// blocks left to be checked when read.
func TestStoreBlocksCheckedInTurn(t *testing.T) {
	t.Parallel()
	ids := make([]string, 300) // ten blocks, the last of 12 rows
	for i := range ids {
		ids[i] = fmt.Sprintf("s%05d", i)
	}
	st := storeOf(ids)
	st.sortOrder()
	file := mustStoreFile(t, st)
	numsAt := int(le64(file[len(storeMagic):]))
	const k = 3
	all := blocksOf(len(ids))
	minutes := (all + k - 1) / k
	for blk := range all {
		b := slices.Clone(file)
		b[numsAt+blk*rowsBlock*rowWidth+3] ^= 1
		for from := range all {
			found := false
			for m := range minutes {
				now := fixNow.Add(time.Duration(from+m) * time.Minute).UnixMilli()
				_, err := readStore(bytes.NewReader(b), int64(len(b)), now, k)
				switch {
				case err == nil:
				case errors.Is(err, errCorrupt) && strings.Contains(err.Error(), fmt.Sprintf("block %d ", blk)):
					found = true
				default:
					t.Fatalf("block %d damaged, minute %d: %v", blk, from+m, err)
				}
			}
			if !found {
				t.Errorf("block %d of %d damaged: not found in %d minutes from minute %d, %d blocks a minute", blk, all, minutes, from, k)
			}
		}
		if _, err := readStore(bytes.NewReader(b), int64(len(b)), fixNow.UnixMilli(), -1); err != nil {
			t.Errorf("block %d damaged, read with no window: %v", blk, err)
		}
	}
}

// TestStoreBlockEdges: a record of no rows, of one, and of rows that fill
// their last block or pass it by one, reads back as written, every row
// decoded from its block.
func TestStoreBlockEdges(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, rowsBlock - 1, rowsBlock, rowsBlock + 1, 2 * rowsBlock} {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("s%03d", i)
		}
		st := storeOf(ids)
		for i := range st.all() {
			st.all()[i].Rank, st.all()[i].URLSum = n-i, uint64(i)*0x9e3779b97f4a7c15
		}
		st.sortOrder()
		got, err := decodeText(string(mustStoreFile(t, st)))
		if err != nil {
			t.Fatalf("%d rows: %v", n, err)
		}
		if !sameRows(got, st) || got.n() != n {
			t.Errorf("%d rows: read back as %d other rows", n, got.n())
		}
	}
}
