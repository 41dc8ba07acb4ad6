package history

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"slices"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// The state files' format v2 (stateMagic) lets a reader that needs a few
// thousand states of a million (a plan) read only the kilobytes holding
// them. After the magic come the states sorted by id, in blocks of
// stateBlock: each block is its number of states, their fields (as in v1,
// statefile.go) and the CRC-32C of the block. Then the index: the sequence
// number (for the snapshot, the last delta it holds; for a delta, its
// own), the number of states, the number of blocks and, for each block,
// its first id and its length in bytes, then the index's CRC-32C. Last the
// trailer, 16 bytes: the index's offset (8 bytes) and length (4 bytes),
// little-endian, and the CRC-32C of the whole file before it, as every
// file of the codec ends.
//
// A reader of every state (a fold, a publish, a rewrite) checks the whole
// file's checksum, so damage anywhere is found; a reader of a few checks
// the index's and those of the blocks it reads, and damage elsewhere waits
// for the next of those.

const (
	stateMagic  = "PDST\x02"
	stateBlock  = 16 // states a block holds, the last one fewer
	trailerSize = 16
)

// encodeStates encodes every state of m with the sequence number seq.
func encodeStates(seq uint64, m map[string]data.State) []byte {
	ids := slices.Sorted(maps.Keys(m))
	e := durable.NewEncoder(stateMagic, 64+len(m)*100)
	ends := make([]int, 0, (len(ids)+stateBlock-1)/stateBlock)
	for lo := 0; lo < len(ids); lo += stateBlock {
		start := e.Len()
		block := ids[lo:min(lo+stateBlock, len(ids))]
		e.Uvarint(uint64(len(block)))
		for _, id := range block {
			encodeState(e, m[id])
		}
		e.Sum(start)
		ends = append(ends, e.Len())
	}
	index := e.Len()
	e.Uvarint(seq)
	e.Uvarint(uint64(len(ids)))
	e.Uvarint(uint64(len(ends)))
	prev := len(stateMagic)
	for i, end := range ends {
		e.String(ids[i*stateBlock])
		e.Uvarint(uint64(end - prev))
		prev = end
	}
	e.Sum(index)
	size := e.Len() - index
	e.Uint64(uint64(index))
	e.Uint32(uint32(size))
	return e.Finish()
}

// stateIndex is a v2 file's index: block i is the bytes from off[i] to
// off[i+1] and starts with the state of id first[i].
type stateIndex struct {
	seq   uint64
	n     int // states
	first []string
	off   []int64 // one more than first: the last is the index's offset
}

// count returns how many states block i holds.
func (x *stateIndex) count(i int) int { return min(stateBlock, x.n-i*stateBlock) }

// indexPlace returns the offset and length of the index of a v2 file of
// size bytes whose trailer is trailer, failing unless the index lies
// between the first block and the trailer.
func indexPlace(trailer []byte, size int64, damaged error) (off, n int64, err error) {
	off, n = int64(binary.LittleEndian.Uint64(trailer)), int64(binary.LittleEndian.Uint32(trailer[8:]))
	if off < int64(len(stateMagic)) || off > size || off+n != size-trailerSize {
		return 0, 0, fmt.Errorf("%w: bad index place", damaged)
	}
	return off, n, nil
}

// decodeIndex decodes the index text, whose CRC-32C is sum, of a v2 file
// whose index is at offset end.
func decodeIndex(text string, sum uint32, end int64, damaged error) (stateIndex, error) {
	d, err := durable.NewDecoder(text, sum, "", damaged)
	if err != nil {
		return stateIndex{}, fmt.Errorf("index: %w", err)
	}
	var x stateIndex
	x.seq = d.Uvarint()
	n := d.Uvarint()
	blocks := d.Count(2)
	if n > uint64(blocks)*stateBlock || n+stateBlock <= uint64(blocks)*stateBlock {
		d.Fail("number of states")
	}
	x.n = int(n)
	x.first = make([]string, 0, blocks)
	x.off = make([]int64, 1, blocks+1)
	x.off[0] = int64(len(stateMagic))
	for i := range blocks {
		id := d.String()
		length := d.Uvarint()
		if i > 0 && id <= x.first[i-1] {
			d.Fail("block order")
		}
		if length > uint64(end-x.off[i]) {
			d.Fail("block length")
		}
		if d.Err() != nil {
			break
		}
		x.first = append(x.first, id)
		x.off = append(x.off, x.off[i]+int64(length))
	}
	if d.Err() == nil && x.off[len(x.off)-1] != end {
		d.Fail("block lengths")
	}
	if err := d.Close(); err != nil {
		return stateIndex{}, fmt.Errorf("index: %w", err)
	}
	return x, nil
}

// decodeBlock decodes block i of x, its text with its CRC-32C sum, into
// m: with keep set, only the states whose id it keeps, given their own
// strings so that the file's can go.
func decodeBlock(x *stateIndex, i int, text string, sum uint32, keep func(id string) bool, m map[string]data.State, damaged error) error {
	d, err := durable.NewDecoder(text, sum, "", damaged)
	if err != nil {
		return fmt.Errorf("block %d: %w", i, err)
	}
	if d.Uvarint() != uint64(x.count(i)) {
		d.Fail("block size")
	}
	prev := ""
	for j := range x.count(i) {
		id := d.String()
		if j == 0 && id != x.first[i] || j > 0 && id <= prev {
			d.Fail("state order")
		}
		if d.Err() != nil {
			break
		}
		prev = id
		if keep != nil && !keep(id) {
			skipState(d)
			continue
		}
		s := decodeState(d, id)
		if keep != nil {
			s = cloneState(s)
		}
		m[id] = s
	}
	if err := d.Close(); err != nil {
		return fmt.Errorf("block %d: %w", i, err)
	}
	return nil
}

// decodeBlocks decodes a v2 file read whole: its checksum checks every
// block and the index, which are then not summed again.
func decodeBlocks(f stateFile, keep func(id string) bool) (seq uint64, m map[string]data.State, err error) {
	damaged := errStateDamaged(f.kind)
	if _, err := durable.NewDecoder(f.text, f.crc, stateMagic, damaged); err != nil {
		return 0, nil, err
	}
	size := int64(len(f.text))
	if size < int64(len(stateMagic))+trailerSize {
		return 0, nil, fmt.Errorf("%w: too short", damaged)
	}
	off, n, err := indexPlace([]byte(f.text[size-trailerSize:]), size, damaged)
	if err != nil {
		return 0, nil, err
	}
	x, err := decodeIndex(f.text[off:off+n], durable.CRCResidue, off, damaged)
	if err != nil {
		return 0, nil, err
	}
	if keep == nil {
		m = make(map[string]data.State, x.n)
	} else {
		m = map[string]data.State{}
	}
	for i := range x.first {
		if err := decodeBlock(&x, i, f.text[x.off[i]:x.off[i+1]], durable.CRCResidue, keep, m, damaged); err != nil {
			return 0, nil, err
		}
	}
	return x.seq, m, nil
}

// errNotBlocks says a state file is not one readBlocksOf reads: a v1 file,
// or one too damaged to tell, read whole instead.
var errNotBlocks = errors.New("not a file of blocks")

// readBlocksOf reads, of the v2 state file r of size bytes, the trailer,
// the index and the blocks that may hold sel.ids, and returns the states
// of those ids, checking the checksum of each part read.
func readBlocksOf(r io.ReaderAt, size int64, kind string, sel selection) (seq uint64, m map[string]data.State, err error) {
	damaged := errStateDamaged(kind)
	if size < int64(len(stateMagic))+trailerSize {
		return 0, nil, errNotBlocks
	}
	head, trailer := make([]byte, len(stateMagic)), make([]byte, trailerSize)
	if err := readAt(r, head, 0, damaged); err != nil {
		return 0, nil, err
	}
	if string(head) != stateMagic {
		return 0, nil, errNotBlocks
	}
	if err := readAt(r, trailer, size-trailerSize, damaged); err != nil {
		return 0, nil, err
	}
	off, n, err := indexPlace(trailer, size, damaged)
	if err != nil {
		return 0, nil, err
	}
	index := make([]byte, n)
	if err := readAt(r, index, off, damaged); err != nil {
		return 0, nil, err
	}
	x, err := decodeIndex(string(index), crc32.Checksum(index, durable.Castagnoli), off, damaged)
	if err != nil {
		return 0, nil, err
	}
	m = make(map[string]data.State, len(sel.ids))
	last := -1
	for _, id := range sel.ids {
		i, found := slices.BinarySearch(x.first, id)
		if !found {
			i-- // in the block before the first id after it
		}
		if i < 0 || i == last {
			continue
		}
		last = i
		block := make([]byte, x.off[i+1]-x.off[i])
		if err := readAt(r, block, x.off[i], damaged); err != nil {
			return 0, nil, err
		}
		if err := decodeBlock(&x, i, string(block), crc32.Checksum(block, durable.Castagnoli), sel.keep, m, damaged); err != nil {
			return 0, nil, err
		}
	}
	return x.seq, m, nil
}

// readAt fills b from r at off; a file shorter than its trailer says is
// damaged.
func readAt(r io.ReaderAt, b []byte, off int64, damaged error) error {
	_, err := r.ReadAt(b, off)
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: cut short", damaged)
	}
	return err
}

// readStateFileOf reads the states of sel from the state file at path, of
// kind: with sel.ids, from a v2 file only the blocks that may hold them.
// Errors are os.Open's and the read's, unwrapped, and those wrapping
// ErrDamaged.
func readStateFileOf(path, kind string, sel selection) (seq uint64, m map[string]data.State, err error) {
	if sel.ids != nil {
		f, err := os.Open(path)
		if err != nil {
			return 0, nil, err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return 0, nil, err
		}
		if seq, m, err = readBlocksOf(f, fi.Size(), kind, sel); !errors.Is(err, errNotBlocks) {
			return seq, m, err
		}
	}
	f, err := readStateFile(path, kind)
	if err != nil {
		return 0, nil, err
	}
	return decodeStates(f, sel.keep)
}
