package durable

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/bits"
)

// The prober's own binary files (the state snapshot and its deltas, the
// ledger, the site's record) share one layout and one codec: a magic that
// names the file and its version, fields as varints, strings as a uvarint
// length and bytes, fixed-width numbers little-endian, and last the
// CRC-32C of everything before it, little-endian. A file is read into one
// string, summed as it is read, and its strings are sliced out of it, so a
// million records cost a few allocations, not millions.

// Castagnoli is the CRC-32C table of every checksum in the prober's
// files: the codec's, the lines', the ranked list copy's and Parquet's.
var Castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRCResidue is the CRC-32C of any text followed by its own CRC-32C,
// little-endian: the checksum of a whole file that is intact.
var CRCResidue = crc32.Checksum(binary.LittleEndian.AppendUint32(nil, crc32.Checksum(nil, Castagnoli)), Castagnoli)

// Encoder builds one binary file in memory.
type Encoder struct{ b []byte }

// NewEncoder starts a file with magic, with room for about size bytes.
func NewEncoder(magic string, size int) *Encoder {
	return &Encoder{b: append(make([]byte, 0, size+len(magic)+4), magic...)}
}

// Uvarint appends v as a uvarint, the bytes binary.AppendUvarint appends.
// They are appended to e.b in place: storing back the slice a function
// returns is a write barrier each while the garbage collector runs, ten
// million a ledger.
func (e *Encoder) Uvarint(v uint64) {
	for v >= 0x80 {
		e.b = append(e.b, byte(v)|0x80)
		v >>= 7
	}
	e.b = append(e.b, byte(v))
}

// Varint appends v as a varint, zigzag encoded as binary.AppendVarint.
func (e *Encoder) Varint(v int64) { e.Uvarint(uint64(v<<1) ^ uint64(v>>63)) }

// String appends s as its length and bytes.
func (e *Encoder) String(s string) {
	e.Uvarint(uint64(len(s)))
	e.b = append(e.b, s...)
}

// Byte appends one byte.
func (e *Encoder) Byte(c byte) { e.b = append(e.b, c) }

// Uint64 appends v in eight bytes, little-endian.
func (e *Encoder) Uint64(v uint64) {
	e.b = append(e.b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24), byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56))
}

// Uint32 appends v in four bytes, little-endian.
func (e *Encoder) Uint32(v uint32) { e.b = binary.LittleEndian.AppendUint32(e.b, v) }

// Len returns how many bytes are encoded, the magic included: the offset
// of the next field.
func (e *Encoder) Len() int { return len(e.b) }

// Sum appends the CRC-32C of the bytes encoded from offset from on: a part
// of the file that is checked on its own, as NewDecoder with no magic
// checks a file (the state files' blocks).
func (e *Encoder) Sum(from int) { e.Uint32(crc32.Checksum(e.b[from:], Castagnoli)) }

// Raw appends b as it is: a fixed-width record.
func (e *Encoder) Raw(b []byte) { e.b = append(e.b, b...) }

// Append appends what o encoded, an encoder started with no magic: records
// encoded side by side join the file in order.
func (e *Encoder) Append(o *Encoder) { e.b = append(e.b, o.b...) }

// Bytes returns what is encoded so far, the magic included, without a
// checksum: for a caller that compares records with those of the file it
// read (Decoder.Offset), the slice is e's own until the next append.
func (e *Encoder) Bytes() []byte { return e.b }

// Finish appends the checksum and returns the file.
func (e *Encoder) Finish() []byte {
	e.Sum(0)
	return e.b
}

// Decoder reads the fields of one file in the order they were encoded. The
// first error sticks: later reads return zero values, and Err or Close
// report it, wrapping the damaged error given to NewDecoder.
type Decoder struct {
	s       string // the file without its checksum
	off     int
	err     error
	damaged error
}

// NewDecoder checks a whole file's text, whose CRC-32C (its own checksum
// included) is sum, as ReadSummed returns them, and returns a Decoder of
// the fields after magic. A file that does not start with magic, or whose
// checksum does not match, is an error wrapping damaged.
func NewDecoder(text string, sum uint32, magic string, damaged error) (*Decoder, error) {
	if len(text) < len(magic)+4 || text[:len(magic)] != magic {
		return nil, fmt.Errorf("%w: not a %q file", damaged, magic)
	}
	if sum != CRCResidue {
		return nil, fmt.Errorf("%w: checksum mismatch", damaged)
	}
	return &Decoder{s: text[:len(text)-4], off: len(magic), damaged: damaged}, nil
}

// NewPieceDecoder returns a Decoder of text, a piece of a file read a part
// at a time whose checksum its reader checks: offsets in its errors are
// from the piece's start.
func NewPieceDecoder(text string, damaged error) *Decoder {
	return &Decoder{s: text, damaged: damaged}
}

// ReadSummed reads the file at path into one string and returns it with
// its CRC-32C, computed as it is read, for NewDecoder. Errors are os.Open's
// and the read's, unwrapped.
func ReadSummed(path string) (string, uint32, error) { return readSummed(path, Castagnoli) }

func (d *Decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s at byte %d", d.damaged, what, d.off)
	}
	d.off = len(d.s)
}

// Uvarint reads a uvarint, as binary.Uvarint does, overflow included.
// One of at most eight bytes, nearly every one in a ledger or a state
// file, is read from one word: a million records are tens of millions of
// numbers.
func (d *Decoder) Uvarint() uint64 {
	if len(d.s)-d.off >= 8 {
		w := word(d.s[d.off:])
		if stops := ^w & 0x8080808080808080; stops != 0 {
			n := bits.TrailingZeros64(stops)/8 + 1
			d.off += n
			x := w&0x7f | w>>1&(0x7f<<7) | w>>2&(0x7f<<14) | w>>3&(0x7f<<21) |
				w>>4&(0x7f<<28) | w>>5&(0x7f<<35) | w>>6&(0x7f<<42) | w>>7&(0x7f<<49)
			return x & (1<<(7*n) - 1)
		}
	}
	var x uint64
	var shift uint
	for i := 0; i < binary.MaxVarintLen64 && d.off+i < len(d.s); i++ {
		c := d.s[d.off+i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break
			}
			d.off += i + 1
			return x | uint64(c)<<shift
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	d.fail("number")
	return 0
}

// word returns the first eight bytes of s, little-endian.
func word(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// Varint reads a varint.
func (d *Decoder) Varint() int64 {
	u := d.Uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

// String reads a string: a substring of the file's text.
func (d *Decoder) String() string {
	n := d.Uvarint()
	if n > uint64(len(d.s)-d.off) {
		d.fail("string")
		return ""
	}
	s := d.s[d.off : d.off+int(n)]
	d.off += int(n)
	return s
}

// SkipString passes over a string.
func (d *Decoder) SkipString() {
	n := d.Uvarint()
	if n > uint64(len(d.s)-d.off) {
		d.fail("string")
		return
	}
	d.off += int(n)
}

// SkipNumber passes over a uvarint or varint.
func (d *Decoder) SkipNumber() {
	if len(d.s)-d.off >= 8 {
		if stops := ^word(d.s[d.off:]) & 0x8080808080808080; stops != 0 {
			d.off += bits.TrailingZeros64(stops)/8 + 1
			return
		}
	}
	for end := min(d.off+binary.MaxVarintLen64, len(d.s)); d.off < end; {
		c := d.s[d.off]
		d.off++
		if c < 0x80 {
			return
		}
	}
	d.fail("number")
}

// Byte reads one byte.
func (d *Decoder) Byte() byte {
	if d.off >= len(d.s) {
		d.fail("byte")
		return 0
	}
	c := d.s[d.off]
	d.off++
	return c
}

// Uint64 reads eight bytes, little-endian.
func (d *Decoder) Uint64() uint64 {
	if len(d.s)-d.off < 8 {
		d.fail("number")
		return 0
	}
	v := word(d.s[d.off:])
	d.off += 8
	return v
}

// Raw reads n bytes as they are: a fixed-width record.
func (d *Decoder) Raw(n int) string {
	if n < 0 || n > len(d.s)-d.off {
		d.fail("record")
		return ""
	}
	s := d.s[d.off : d.off+n]
	d.off += n
	return s
}

// Count reads a number of records of at least min bytes each (min > 0),
// failing when fewer bytes are left than they need: a damaged count cannot
// make the reader allocate gigabytes.
func (d *Decoder) Count(min int) int {
	n := d.Uvarint()
	if n > uint64((len(d.s)-d.off)/min) {
		d.fail("count")
		return 0
	}
	return int(n)
}

// Offset returns the offset in the file's text of the next field: where
// a record read ends, for a caller that later compares it with its new
// encoding (Encoder.Bytes).
func (d *Decoder) Offset() int { return d.off }

// Fail records that the field just read, named what, is out of range.
func (d *Decoder) Fail(what string) { d.fail(what) }

// Err returns the first error, nil when none.
func (d *Decoder) Err() error { return d.err }

// Close returns the first error, or one when bytes are left after the last
// field.
func (d *Decoder) Close() error {
	if d.err == nil && d.off != len(d.s) {
		d.err = fmt.Errorf("%w: %d bytes after the end", d.damaged, len(d.s)-d.off)
	}
	return d.err
}
