package durable

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// A log of records, as the site's record log (state-delta.bin) and a
// server's older checks keep them, appended to in place: each record is
// its length (four bytes, little-endian) and the CRC-32C of those four
// bytes, then the record. A record cut short (fewer bytes than its head
// or than its length says) is one a write killed midway left: read as
// never written, and written over by the next append. A length whose
// checksum fails is damage.

// RecordHead is the bytes of a record's head: its length and the length's
// checksum.
const RecordHead = 8

// AppendRecordHead appends to b the head of a record of n bytes.
func AppendRecordHead(b []byte, n int) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[len(b)-4:], Castagnoli))
}

// EachRecord calls each with the offset and the bytes of every whole
// record of text from off on, a record being the length its head says and
// extra bytes more (a checksum of its own that the length leaves out), and
// returns where the last whole record ends: where the next is appended
// (text as a string or as bytes, as its reader holds it: not copied). It
// stops at a record cut short, fails with an error wrapping damaged at a
// length whose checksum fails, and returns each's error as it is.
func EachRecord[T ~string | ~[]byte](text T, off, extra int, damaged error, each func(off int, rec T) error) (end int, err error) {
	for len(text)-off >= RecordHead {
		h := text[off : off+RecordHead]
		if binary.LittleEndian.Uint32([]byte(h[4:])) != crc32.Checksum([]byte(h[:4]), Castagnoli) {
			return off, fmt.Errorf("%w: length of the record at byte %d", damaged, off)
		}
		n := int(binary.LittleEndian.Uint32([]byte(h[:4])))
		if n > len(text)-off-RecordHead-extra {
			break // cut short: never written
		}
		if err := each(off, text[off+RecordHead:off+RecordHead+n+extra]); err != nil {
			return off, err
		}
		off += RecordHead + n + extra
	}
	return off, nil
}
