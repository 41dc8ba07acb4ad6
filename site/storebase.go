package site

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"strings"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// A publish at 100,000 servers touches a few hundred of the record's rows,
// but what it needs of every row is small: its id (to find a row by it),
// its protocol version and a byte of facts (index.json's counts, the rows
// paused), when its files expire (the rows due this minute) and the rank
// order. state.bin v7 keeps those in its head under one checksum, some 23
// bytes a row with a 10-byte id, and the expiries last, read a block at a
// time and not kept; the rows' numbers, 86 bytes a row, come after the
// head, in blocks of rowsBlock rows, each with its CRC-32C in the head. A
// publish reads and checks only the blocks of the rows it decodes, and a
// window of blocksChecked more that moves with the minute, so that damage
// in rows no publish asks for is found within the hour at 100,000 servers
// (3,125 blocks), within 8 hours at a million. A damaged block found as
// the record is read rebuilds the site at once, as a damaged head does;
// one found later in the minute fails the publish, which asks the next to
// rebuild (stateDamaged). Where v6 read 10.8 MB at 100,000 servers to
// check its one checksum, v7 reads a head of 3.1 MB, keeps 2.3 MB of it,
// and reads some 300 KB of blocks.

const (
	rowsBlock     = 32 // rows whose numbers one checksum of state.bin covers: 2,752 bytes
	blocksChecked = 64 // blocks of state.bin a publish checks beyond those it reads, some 176 KB
)

// blocksOf returns the number of blocks of n rows.
func blocksOf(n int) int { return (n + rowsBlock - 1) / rowsBlock }

// blockSums returns the CRC-32C of each block of the rows' numbers nums,
// four bytes each, little-endian.
func blockSums(nums []byte) []byte {
	const size = rowsBlock * rowWidth
	out := make([]byte, 0, 4*blocksOf(len(nums)/rowWidth))
	for lo := 0; lo < len(nums); lo += size {
		out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(nums[lo:min(lo+size, len(nums))], durable.Castagnoli))
	}
	return out
}

// readBase reads the head of a v7 base, size bytes of r (file) whose
// first bytes readStore read are pre, and decodes the rows whose files expire by due, Unix ms; it checks the
// window of check blocks of the minute of due (checkBlocks). It keeps the
// head, but for its expiries, which it reads a block at a time. Errors
// wrap errCorrupt, but the reader's own.
func readBase(r io.ReaderAt, pre []byte, size, due int64, check int) (*store, error) {
	if len(pre) < len(storeMagic)+16 {
		return nil, fmt.Errorf("%w: %v", errCorrupt, errShort)
	}
	headLen, rows := int64(le64(pre[len(storeMagic):])), le64(pre[len(storeMagic)+8:])
	if rows > uint64(size)/(headWidth+8+rowWidth) {
		return nil, fmt.Errorf("%w: bad number of rows", errCorrupt)
	}
	n := int(rows)
	kept := headLen - 4 - 8*int64(n) // the head before its expiries
	if kept < int64(len(pre)) || headLen > size {
		return nil, fmt.Errorf("%w: bad head length", errCorrupt)
	}
	crc := crc32.New(durable.Castagnoli)
	var b strings.Builder
	b.Grow(int(kept))
	if _, err := io.Copy(&b, io.TeeReader(io.NewSectionReader(r, 0, kept), crc)); err != nil {
		return nil, err
	}
	text := b.String()
	if int64(len(text)) != kept {
		return nil, fmt.Errorf("%w: %v", errCorrupt, errShort)
	}
	dueRows, sum, err := readExpiries(r, kept, n, due, crc)
	if err != nil {
		return nil, err
	}
	if want := headLen + int64(n)*rowWidth; size != want {
		return nil, fmt.Errorf("%w: %d bytes, where its head and rows make %d", errCorrupt, size, want)
	}
	d := durable.NewPieceDecoder(text[len(pre):], errCorrupt)
	s := newStore()
	if s.baseMeta = d.String(); d.Err() == nil {
		if s.Meta, err = decodeMeta(s.baseMeta); err != nil {
			return nil, err
		}
	}
	rt := rowsText{versions: make([]string, d.Count(1)), numsAt: headLen}
	for k := range rt.versions {
		rt.versions[k] = d.String()
	}
	rt.ids = d.Raw(int(d.Uvarint()))
	rt.ends, rt.versionOf = d.Raw(4*n), d.Raw(4*n)
	facts, order := d.Raw(n), d.Raw(4*n)
	if err := d.Err(); err != nil {
		return nil, err
	}
	lazy := s.readLazily(r, rt, n)
	lazy.facts = facts
	t := newTally(lazy)
	for i := range n {
		if !t.add(s, i, facts[i]) {
			return nil, fmt.Errorf("%w: bad row %d", errCorrupt, i)
		}
	}
	t.done(s)
	if err := checkOrder(order, n); err != nil {
		return nil, fmt.Errorf("%w: %v", errCorrupt, err)
	}
	s.baseOrder = order
	s.Meta.Index = s.decodeParts(d)
	lazy.sums = d.Raw(4 * blocksOf(n))
	if err := d.Close(); err != nil {
		return nil, err
	}
	s.readAsBase(sum, headLen-4, size)
	if err := s.checkBlocks(time.UnixMilli(due), check); err != nil {
		return nil, err
	}
	if s.loadRows(dueRows); lazy.err != nil {
		return nil, lazy.err
	}
	return s, nil
}

// readExpiries reads into crc the expiries of n rows at off, Unix ms,
// eight bytes each, and the head's checksum after them, which it checks;
// it returns the rows due by due and the checksum.
func readExpiries(r io.ReaderAt, off int64, n int, due int64, crc hash.Hash32) ([]int, string, error) {
	buf := make([]byte, 64<<10)
	var dueRows []int
	for lo := 0; lo < n; lo += len(buf) / 8 {
		b := buf[:8*min(len(buf)/8, n-lo)]
		if _, err := r.ReadAt(b, off+8*int64(lo)); err != nil {
			return nil, "", shortFile(err)
		}
		crc.Write(b)
		for j := 0; j < len(b); j += 8 {
			if exp := int64(le64(b[j:])); exp != 0 && exp <= due {
				dueRows = append(dueRows, lo+j/8)
			}
		}
	}
	sum := buf[:4]
	if _, err := r.ReadAt(sum, off+8*int64(n)); err != nil {
		return nil, "", shortFile(err)
	}
	if crc.Write(sum); crc.Sum32() != durable.CRCResidue {
		return nil, "", fmt.Errorf("%w: checksum mismatch", errCorrupt)
	}
	return dueRows, string(sum), nil
}

// shortFile returns err, as errCorrupt when the file ended before what was
// read.
func shortFile(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: %v", errCorrupt, errShort)
	}
	return err
}

// readLazily makes the n rows of rt, a base read from at, the rows of s,
// each decoded when first asked for.
func (s *store) readLazily(at io.ReaderAt, rt rowsText, n int) *lazyRows {
	numbers := make([]uint32, len(rt.versions)+1)
	for k, v := range rt.versions {
		numbers[k+1] = protocolNumber(v)
	}
	s.ids, s.baseRows = rt.ids, rt
	s.lazy = &lazyRows{at: at, numsAt: rt.numsAt, numbers: numbers, slot: make([]int32, n)}
	return s.lazy
}

// tally checks the rows of a base as they are read, a row's id, version
// and facts, and counts them for index.json's totals. The rows are
// counted by their facts byte and their version, and the counts folded
// into the base's once (done): some 10 ns a row less.
type tally struct {
	byFacts   [256]int
	byVersion []int // of the rows whose facts are read
	from      uint32
}

func newTally(lazy *lazyRows) *tally { return &tally{byVersion: make([]int, len(lazy.numbers))} }

// add checks and counts row i of s, whose facts are fb; false when its id
// does not follow the one before within the ids, its version is not in
// the table, or its status is not one of data.Outcomes.
func (t *tally) add(s *store, i int, fb byte) bool {
	rt, lazy := &s.baseRows, s.lazy
	end, v := u32At(rt.ends, i), u32At(rt.versionOf, i)
	if end < t.from || int(end) > len(rt.ids) || int(v) >= len(lazy.numbers) || int(fb&0x0f) >= len(data.Outcomes) {
		return false
	}
	t.from = end
	t.byFacts[fb]++
	if fb&0x80 == 0 {
		t.byVersion[v]++
	}
	if fb&0x10 != 0 {
		lazy.paused = append(lazy.paused, i)
	}
	return true
}

// done folds the counts into s's base.
func (t *tally) done(s *store) {
	lazy := s.lazy
	for fb, k := range t.byFacts {
		if k > 0 {
			lazy.base.add(factsOfByte(byte(fb), 0), k)
		}
	}
	for v, k := range t.byVersion {
		lazy.base.addVersion(lazy.numbers[v], k)
	}
	s.factsPending = lazy.base.pending > 0
}

// checkOrder checks the rank order of n rows, four bytes each: every
// index one of a row.
func checkOrder(order string, n int) error {
	for k := range n {
		if int(u32At(order, k)) >= n {
			return fmt.Errorf("bad order at its %d-th", k)
		}
	}
	return nil
}

// numbersFacts returns the facts byte of a row's numbers (appendFixed),
// and whether its status is one of data.Outcomes.
func numbersFacts[T string | []byte](nums T) (byte, bool) {
	st := nums[84]
	return factsByte(st&0x7f, st&0x80 != 0, nums[85] != 0, int32(le32(nums[80:]))), int(st&0x7f) < len(data.Outcomes)
}

// checkBlocks reads and checks the window of k blocks of the rows'
// numbers of the minute of now (window), whatever rows are asked for:
// k 0 is blocksChecked, below 0 none.
func (s *store) checkBlocks(now time.Time, k int) error {
	n := s.n()
	all := blocksOf(n)
	if k == 0 {
		k = blocksChecked
	}
	if k = min(k, all); k <= 0 {
		return nil
	}
	start := window(now, k, all)
	for _, span := range [][2]int{{start, min(start+k, all)}, {0, start + k - all}} {
		if span[0] < span[1] {
			if _, _, err := s.lazy.read(span[0]*rowsBlock, min(span[1]*rowsBlock, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

// read reads the numbers of rows lo to hi-1 of the base, and of a v7 one
// the whole blocks they are in, each checked; it returns them and the row
// they start with. The bytes are b.buf's, until the next read.
func (b *lazyRows) read(lo, hi int) ([]byte, int, error) {
	if b.sums != "" {
		lo, hi = lo/rowsBlock*rowsBlock, min(blocksOf(hi)*rowsBlock, len(b.slot))
	}
	n := (hi - lo) * rowWidth
	if cap(b.buf) < n {
		b.buf = make([]byte, n)
	}
	buf := b.buf[:n]
	if _, err := b.at.ReadAt(buf, b.numsAt+int64(lo)*rowWidth); err != nil {
		return nil, lo, fmt.Errorf("rows %d to %d: %w", lo, hi-1, err)
	}
	if b.sums == "" {
		return buf, lo, nil // a v6 base, checked whole as it was read
	}
	for k := lo / rowsBlock; k*rowsBlock < hi; k++ {
		from := (k*rowsBlock - lo) * rowWidth
		block := buf[from:min(from+rowsBlock*rowWidth, n)]
		if crc32.Checksum(block, durable.Castagnoli) != u32At(b.sums, k) {
			return nil, lo, fmt.Errorf("%w: block %d (rows %d to %d): checksum mismatch", errCorrupt, k, k*rowsBlock, k*rowsBlock+len(block)/rowWidth-1)
		}
	}
	return buf, lo, nil
}
