package history

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/datatest"
	"plug.directory/prober/data/spool/spooltest"
	"plug.directory/prober/internal/durable"
)

// statesOfN returns n servers' states, ids srv-0000 on.
func statesOfN(n int) map[string]data.State {
	m := make(map[string]data.State, n)
	for i := range n {
		id := fmt.Sprintf("srv-%04d", i)
		m[id] = data.State{ID: id, URL: "https://" + id + ".example/mcp", LastCheck: datatest.T0.Add(time.Duration(i) * time.Second),
			LastStatus: data.Outcomes[i%len(data.Outcomes)], LastDetail: strings.Repeat("d", i%7), Protocol: "2025-11-25"}
	}
	return m
}

// encodeStatesV1 encodes m as the v1 files were written.
func encodeStatesV1(seq uint64, m map[string]data.State) []byte {
	e := durable.NewEncoder(stateMagicV1, 0)
	e.Uvarint(seq)
	e.Uvarint(uint64(len(m)))
	for _, s := range m {
		encodeState(e, s)
	}
	return e.Finish()
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r *bytes.Reader
	n int64
}

func (c *countingReader) ReadAt(b []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(b, off)
	c.n += int64(n)
	return n, err
}

// TestStateBlocks: a v2 file of any number of states reads back whole, and
// read by blocks gives exactly the states of the ids asked, present or not,
// reading the trailer, the index and one block an id, no more.
func TestStateBlocks(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, stateBlock - 1, stateBlock, stateBlock + 1, 1000} {
		states := statesOfN(n)
		b := encodeStates(9, states)
		if !bytes.HasPrefix(b, []byte(stateMagic)) {
			t.Fatalf("%d states: written as % x", n, b[:5])
		}
		seq, got, err := decodeStates(stateFileOf(b), nil)
		if err != nil || seq != 9 || !reflect.DeepEqual(got, states) {
			t.Fatalf("%d states: read whole: seq %d, %d states, %v", n, seq, len(got), err)
		}
		ids := []string{"a", "srv-0000", "srv-0000x", fmt.Sprintf("srv-%04d", n/2), fmt.Sprintf("srv-%04d", n-1), "zzz"}
		want := map[string]data.State{}
		for _, id := range ids {
			if s, ok := states[id]; ok {
				want[id] = s
			}
		}
		asked := map[string]bool{}
		for _, id := range ids {
			asked[id] = true
		}
		sel := selection{keep: func(id string) bool { return asked[id] }, ids: ids}
		r := &countingReader{r: bytes.NewReader(b)}
		seq, got, err = readBlocksOf(r, int64(len(b)), "snapshot", sel)
		if err != nil || seq != 9 || !reflect.DeepEqual(got, want) {
			t.Fatalf("%d states: read by blocks: seq %d, %+v, %v; want %+v", n, seq, got, err, want)
		}
		x, err := decodeIndex(string(b[x0(b):len(b)-trailerSize]), durable.CRCResidue, int64(x0(b)), errStateDamaged("snapshot"))
		if err != nil {
			t.Fatal(err)
		}
		var biggest int64
		for i := range x.first {
			biggest = max(biggest, x.off[i+1]-x.off[i])
		}
		most := int64(len(stateMagic)+len(b)-x0(b)) + int64(len(ids))*biggest // head, index, trailer, a block an id
		if r.n > most || n == 1000 && r.n*10 > int64(len(b)) {
			t.Errorf("%d states: read %d bytes of %d, want at most %d", n, r.n, len(b), most)
		}
	}
}

// x0 returns the offset of the index of the v2 file b.
func x0(b []byte) int {
	off, _, _ := indexPlace(b[len(b)-trailerSize:], int64(len(b)), errStateDamaged("snapshot"))
	return int(off)
}

// TestStateV1: a v1 snapshot and delta, as written before the blocks, are
// read whole and by ids alike; the next rewrite writes v2.
func TestStateV1(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	states := statesOfN(40)
	newer := data.State{ID: "srv-0003", URL: "https://srv-0003.example/mcp", LastCheck: datatest.T0.Add(time.Hour), LastStatus: data.Working}
	if err := durable.WriteFileAtomic(data.Dir(dir).State(), encodeStatesV1(4, states), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := durable.WriteFileAtomic(deltaPath(dir, 5), encodeStatesV1(5, map[string]data.State{newer.ID: newer}), 0o644); err != nil {
		t.Fatal(err)
	}
	states[newer.ID] = newer
	if got, bad, err := LoadStates(dir, datatest.T0); err != nil || len(bad) > 0 || !reflect.DeepEqual(got, states) {
		t.Fatalf("LoadStates of v1: %d states, %v %v", len(got), bad, err)
	}
	got, bad, err := LoadStatesOf(dir, []string{"srv-0003", "srv-0039"}, datatest.T0)
	if want := map[string]data.State{"srv-0003": newer, "srv-0039": states["srv-0039"]}; err != nil || len(bad) > 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("LoadStatesOf of v1: %+v %v %v", got, bad, err)
	}
	if err := rewriteSnapshot(dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(data.Dir(dir).State()); !bytes.HasPrefix(b, []byte(stateMagic)) {
		t.Errorf("rewritten as % x, want v2", b[:5])
	}
	if got, _, err := LoadStates(dir, datatest.T0); err != nil || !reflect.DeepEqual(got, states) {
		t.Errorf("after the rewrite: %d states, %v", len(got), err)
	}
}

// rchar returns how many bytes the process has read (Linux), -1 when
// unknown.
func rchar() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	var n int64 = -1
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			fmt.Sscan(v, &n)
		}
	}
	return n
}

// TestLoadStatesOfReadsItsBlocks: the states of a few ids of 20,000 cost a
// read of a few blocks of the snapshot, not of all of it. Not parallel:
// the bytes the process reads are counted.
func TestLoadStatesOfReadsItsBlocks(t *testing.T) {
	dir := t.TempDir()
	states := statesOfN(20_000)
	b := encodeStates(0, states)
	if err := durable.WriteFileAtomic(data.Dir(dir).State(), b, 0o644); err != nil {
		t.Fatal(err)
	}
	ids := []string{"srv-0007", "srv-5000", "srv-19999"}
	before := rchar()
	got, bad, err := LoadStatesOf(dir, ids, datatest.T0)
	read := rchar() - before
	if err != nil || len(bad) > 0 || len(got) != len(ids) || !reflect.DeepEqual(got["srv-5000"], states["srv-5000"]) {
		t.Fatalf("LoadStatesOf: %+v %v %v", got, bad, err)
	}
	if before < 0 {
		t.Skip("no /proc/self/io to count the bytes read")
	}
	t.Logf("read %d bytes of a %d-byte snapshot", read, len(b))
	if read*20 > int64(len(b)) {
		t.Errorf("LoadStatesOf of %d ids read %d bytes of a %d-byte snapshot, want under 1/20", len(ids), read, len(b))
	}
}

// TestStateBlocksDamaged: damage to a v2 snapshot that a read by ids meets
// (a flipped byte in a block it reads, in the index, in the trailer; the
// file cut short or of the wrong magic) is ErrDamaged naming the file,
// and the state is rebuilt from the history. Damage in
// a block it does not read is found by the next fold, which reads every
// block, and repaired there (rule P1: the state is derived data).
func TestStateBlocksDamaged(t *testing.T) {
	t.Parallel()
	// mustDir folds forty servers' results, the last of them read, into a
	// v2 snapshot of three blocks; it returns the states and the
	// snapshot's bytes.
	mustDir := func(t *testing.T, dir string) (map[string]data.State, []byte) {
		var rs []data.Result
		for i := range 40 {
			rs = append(rs, datatest.NewResult(fmt.Sprintf("srv-%04d", i), datatest.T0, data.Failing))
		}
		spooltest.MustJournal(t, dir, "run-1", rs...).Close()
		if _, err := Fold(dir, datatest.T0, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatal(err)
		}
		if err := rewriteSnapshot(dir); err != nil {
			t.Fatal(err)
		}
		want, bad, err := LoadStates(dir, datatest.T0)
		if err != nil || len(bad) > 0 || len(want) != 40 {
			t.Fatal(err, bad)
		}
		b, _ := os.ReadFile(data.Dir(dir).State())
		return want, b
	}
	read := []string{"srv-0039"} // in the last block
	flip := func(at func(b []byte) int) func([]byte) []byte {
		return func(b []byte) []byte { b[at(b)] ^= 0x20; return b }
	}
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
		named  string // in the report, after the file's name
	}{
		{"flipped_byte_in_a_block_read", flip(func(b []byte) int { return x0(b) - 10 }), "block 2: state snapshot is damaged: checksum mismatch"},
		{"flipped_byte_in_the_index", flip(func(b []byte) int { return x0(b) + 2 }), "index: state snapshot is damaged: checksum mismatch"},
		{"flipped_byte_in_the_trailer", flip(func(b []byte) int { return len(b) - trailerSize }), "state snapshot is damaged: bad index place"},
		{"truncated", func(b []byte) []byte { return b[:len(b)-3] }, "state snapshot is damaged"},
		{"wrong_magic", func(b []byte) []byte { b[4] = 9; return b }, `state snapshot is damaged: not a "PDST\x02" file`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			want, b := mustDir(t, dir)
			if err := os.WriteFile(data.Dir(dir).State(), tc.damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
			got, bad, err := LoadStatesOf(dir, read, datatest.T0)
			if err != nil || len(bad) != 1 || !errors.Is(bad[0], durable.ErrDamaged) ||
				!strings.Contains(bad[0].Error(), "states.bin: "+tc.named) || !strings.Contains(bad[0].Error(), asideIn(dir)) {
				t.Fatalf("reported %v, %v; want the damage named %q and the state rebuilt", bad, err, tc.named)
			}
			if !reflect.DeepEqual(got, map[string]data.State{read[0]: want[read[0]]}) {
				t.Errorf("rebuilt %+v, want %+v", got, want[read[0]])
			}
			if all, bad, err := LoadStates(dir, datatest.T0); err != nil || len(bad) > 0 || !maps.EqualFunc(all, want, func(a, b data.State) bool { return reflect.DeepEqual(a, b) }) {
				t.Errorf("after the repair: %d states, %v %v", len(all), bad, err)
			}
		})
	}
	t.Run("flipped_byte_in_a_block_not_read", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		want, b := mustDir(t, dir)
		b[len(stateMagic)+10] ^= 0x20 // in the first block
		if err := os.WriteFile(data.Dir(dir).State(), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if got, bad, err := LoadStatesOf(dir, read, datatest.T0); err != nil || len(bad) > 0 || !reflect.DeepEqual(got[read[0]], want[read[0]]) {
			t.Fatalf("read past the damage: %+v %v %v; want the state of %s, nothing to report", got, bad, err, read[0])
		}
		spooltest.MustJournal(t, dir, "run-2", datatest.NewResult(read[0], datatest.T0.Add(time.Hour), data.Working)).Close()
		if _, err := Fold(dir, datatest.T0, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(data.Dir(dir).Damaged(), "state")); err != nil {
			t.Errorf("the fold set no damaged state aside: %v", err)
		}
		all, bad, err := LoadStates(dir, datatest.T0)
		if err != nil || len(bad) > 0 || len(all) != 40 || !reflect.DeepEqual(all["srv-0000"], want["srv-0000"]) || all[read[0]].LastStatus != data.Working {
			t.Errorf("after the fold: %d states, %v %v", len(all), bad, err)
		}
	})
}
