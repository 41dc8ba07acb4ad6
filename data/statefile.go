package data

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strings"
	"time"
)

// The state files' binary format: "PDST", a version byte, a sequence number
// as a uvarint (for the snapshot, the last delta it holds; for a delta, its
// own), the number of states as a uvarint, each state's fields in the order of State (strings
// as uvarint length and bytes, times as varint Unix nanoseconds with 0 for
// the zero time, the outcome as its index in Outcomes plus one, 0 for
// none), then the CRC-32C of everything before it, little-endian. States
// are in no particular order. Reading makes one string of the whole file
// (summed as it is read) and slices every field out of it, so a million
// states cost a few allocations, not millions.

const (
	stateMagic   = "PDST"
	stateVersion = 1
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// crcResidue is the CRC-32C of any text followed by its own CRC-32C,
// little-endian: the checksum of a whole state file that is intact.
var crcResidue = crc32.Checksum(binary.LittleEndian.AppendUint32(nil, crc32.Checksum(nil, crcTable)), crcTable)

// stateFile is a state file's text and the CRC-32C of all of it, its
// checksum included (crcResidue when intact).
type stateFile struct {
	text string
	crc  uint32
}

// stateFileOf returns the stateFile of the bytes b.
func stateFileOf(b []byte) stateFile { return stateFile{string(b), crc32.Checksum(b, crcTable)} }

// readStateFile reads the state file at path into one string, summing it
// on the way: a million states' file is held once, not as bytes and as
// their copy. Errors are os.Open's and the read's, unwrapped.
func readStateFile(path string) (stateFile, error) {
	text, sum, err := readSummed(path, crcTable)
	return stateFile{text, sum}, err
}

// readSummed reads the file at path into one string and returns it with
// its CRC-32 by tab, computed as it is read. Errors are os.Open's and the
// read's, unwrapped.
func readSummed(path string, tab *crc32.Table) (string, uint32, error) {
	sum := crc32.New(tab)
	text, err := readText(path, sum)
	return text, sum.Sum32(), err
}

// readText reads the file at path into a string in one allocation, also
// writing it to each of also (a checksum, computed on the way): a
// million-row file read every minute is not held twice, as bytes and as
// the string whose substrings the rows keep. Errors are os.Open's and the
// read's, unwrapped.
func readText(path string, also ...io.Writer) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var sb strings.Builder
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		sb.Grow(int(fi.Size()) + 1)
	}
	if _, err := io.Copy(io.MultiWriter(append([]io.Writer{&sb}, also...)...), f); err != nil {
		return "", err
	}
	return sb.String(), nil
}

// errStateCorrupt is wrapped by decodeStates for a snapshot that does not
// decode or whose checksum does not match.
var errStateCorrupt = errors.New("state snapshot is corrupt")

// encodeStates encodes every state of m with the sequence number seq.
func encodeStates(seq uint64, m map[string]State) []byte {
	b := make([]byte, 0, 64+len(m)*96)
	b = append(b, stateMagic...)
	b = append(b, stateVersion)
	b = binary.AppendUvarint(b, seq)
	b = binary.AppendUvarint(b, uint64(len(m)))
	for _, s := range m {
		b = appendString(b, s.ID)
		b = appendString(b, s.URL)
		b = appendTime(b, s.LastCheck)
		b = append(b, outcomeCode(s.LastStatus))
		b = appendString(b, s.LastDetail)
		b = appendTime(b, s.LastAnswered)
		b = appendTime(b, s.FailingSince)
		b = appendString(b, s.Protocol)
		b = appendString(b, s.Transport)
		b = appendTime(b, s.RetryAfter)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return binary.AppendVarint(b, 0)
	}
	return binary.AppendVarint(b, t.UnixNano())
}

// outcomeCode returns o's index in Outcomes plus one, 0 for none.
func outcomeCode(o Outcome) byte {
	for i, v := range Outcomes {
		if v == o {
			return byte(i + 1)
		}
	}
	return 0
}

// decodeStates decodes a file written by encodeStates. With keep set, only
// the states whose id it keeps are returned (a fold needs only the servers
// it has results for, and skipping the rest spares a million map entries).
func decodeStates(f stateFile, keep func(id string) bool) (seq uint64, m map[string]State, err error) {
	b := f.text
	if len(b) < len(stateMagic)+1+4 || b[:len(stateMagic)] != stateMagic {
		return 0, nil, fmt.Errorf("%w: not a state file", errStateCorrupt)
	}
	if v := b[len(stateMagic)]; v != stateVersion {
		return 0, nil, fmt.Errorf("%w: version %d, want %d", errStateCorrupt, v, stateVersion)
	}
	if f.crc != crcResidue {
		return 0, nil, fmt.Errorf("%w: checksum mismatch", errStateCorrupt)
	}
	d := stateDecoder{s: b[:len(b)-4], off: len(stateMagic) + 1}
	seq = d.uvarint()
	n := d.uvarint()
	if n > uint64(len(d.s)) {
		return 0, nil, fmt.Errorf("%w: %d states in %d bytes", errStateCorrupt, n, len(d.s))
	}
	if keep == nil {
		m = make(map[string]State, n)
	} else {
		m = map[string]State{}
	}
	for range n {
		var s State
		s.ID = d.string()
		if keep != nil && d.err == nil && !keep(s.ID) {
			d.skipState()
			continue
		}
		s.URL = d.string()
		s.LastCheck = d.time()
		s.LastStatus = d.outcome()
		s.LastDetail = d.string()
		s.LastAnswered = d.time()
		s.FailingSince = d.time()
		s.Protocol = d.string()
		s.Transport = d.string()
		s.RetryAfter = d.time()
		if d.err != nil {
			return 0, nil, d.err
		}
		if keep != nil {
			// A few states of many: their own strings, so that the
			// file's can go.
			s.ID, s.URL, s.LastDetail = strings.Clone(s.ID), strings.Clone(s.URL), strings.Clone(s.LastDetail)
			s.Protocol, s.Transport = strings.Clone(s.Protocol), strings.Clone(s.Transport)
		}
		m[s.ID] = s
	}
	if d.err != nil {
		return 0, nil, d.err
	}
	if d.off != len(d.s) {
		return 0, nil, fmt.Errorf("%w: %d bytes after the last state", errStateCorrupt, len(d.s)-d.off)
	}
	return seq, m, nil
}

// stateDecoder reads fields off the snapshot; the first error sticks.
type stateDecoder struct {
	s   string
	off int
	err error
}

func (d *stateDecoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s at byte %d", errStateCorrupt, what, d.off)
	}
	d.off = len(d.s)
}

func (d *stateDecoder) uvarint() uint64 {
	var x uint64
	for shift := 0; shift < 64; shift += 7 {
		if d.off >= len(d.s) {
			d.fail("number")
			return 0
		}
		c := d.s[d.off]
		d.off++
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x
		}
	}
	d.fail("number")
	return 0
}

// skipState passes over the fields of a state after its id, as
// decodeStates reads them, without making them.
func (d *stateDecoder) skipState() {
	d.skipString() // URL
	d.skipNumber() // LastCheck
	d.outcome()
	d.skipString() // LastDetail
	d.skipNumber() // LastAnswered
	d.skipNumber() // FailingSince
	d.skipString() // Protocol
	d.skipString() // Transport
	d.skipNumber() // RetryAfter
}

// skipNumber passes over a uvarint or varint.
func (d *stateDecoder) skipNumber() {
	for end := min(d.off+10, len(d.s)); d.off < end; {
		c := d.s[d.off]
		d.off++
		if c < 0x80 {
			return
		}
	}
	d.fail("number")
}

// skipString passes over a string.
func (d *stateDecoder) skipString() {
	n := d.uvarint()
	if n > uint64(len(d.s)-d.off) {
		d.fail("string")
		return
	}
	d.off += int(n)
}

func (d *stateDecoder) string() string {
	n := d.uvarint()
	if n > uint64(len(d.s)-d.off) {
		d.fail("string")
		return ""
	}
	s := d.s[d.off : d.off+int(n)]
	d.off += int(n)
	return s
}

func (d *stateDecoder) time() time.Time {
	u := d.uvarint()
	n := int64(u>>1) ^ -int64(u&1) // zigzag, as binary.AppendVarint
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func (d *stateDecoder) outcome() Outcome {
	if d.off >= len(d.s) {
		d.fail("outcome")
		return ""
	}
	c := int(d.s[d.off])
	d.off++
	if c == 0 {
		return ""
	}
	if c > len(Outcomes) {
		d.fail("outcome")
		return ""
	}
	return Outcomes[c-1]
}
