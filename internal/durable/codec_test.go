package durable

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// errTestDamaged is the damaged error of the decoders of these tests.
var errTestDamaged = errors.New("damaged")

// decoderOf returns a Decoder of the bytes b, as NewDecoder makes one of a
// file whose fields are b.
func decoderOf(b []byte) *Decoder { return &Decoder{s: string(b), damaged: errTestDamaged} }

// TestDecoderNumbers: a number of every length, one after another and at
// the end of a file, is encoded as binary.AppendUvarint and AppendVarint
// encode it, reads back as binary.Uvarint and binary.Varint read it, is passed over by SkipNumber, and a number cut short or overflowing
// is an error, as binary.Uvarint's.
func TestDecoderNumbers(t *testing.T) {
	var values []uint64
	for k := range 64 {
		values = append(values, 1<<k-1, 1<<k, 1<<k+1)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		values = append(values, r.Uint64()>>r.IntN(64))
	}
	values = append(values, math.MaxUint64)
	var b []byte
	e := NewEncoder("", 0)
	for _, v := range values {
		b = binary.AppendUvarint(b, v)
		b = binary.AppendVarint(b, int64(v))
		e.Uvarint(v)
		e.Varint(int64(v))
	}
	if !slices.Equal(e.b, b) {
		t.Fatal("Encoder's numbers are not binary.AppendUvarint's and AppendVarint's")
	}
	e = NewEncoder("", 0)
	if e.Uint64(0x0807060504030201); !slices.Equal(e.b, []byte{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Errorf("Uint64 appended % x", e.b)
	}
	d, skip := decoderOf(b), decoderOf(b)
	for _, v := range values {
		if got := d.Uvarint(); got != v {
			t.Fatalf("Uvarint = %d, want %d", got, v)
		}
		if got := d.Varint(); got != int64(v) {
			t.Fatalf("Varint = %d, want %d", got, int64(v))
		}
		skip.SkipNumber()
		skip.SkipNumber()
		if skip.off != d.off {
			t.Fatalf("SkipNumber passed to byte %d, Uvarint read to %d", skip.off, d.off)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{
		{0x80},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
	} {
		_, n := binary.Uvarint(bad)
		d := decoderOf(bad)
		if d.Uvarint(); n > 0 || !errors.Is(d.Err(), errTestDamaged) {
			t.Errorf("Uvarint of % x: error %v, binary.Uvarint %d", bad, d.Err(), n)
		}
	}
	if d := decoderOf([]byte{1, 2, 3, 4, 5, 6, 7}); d.Uint64() != 0 || d.Err() == nil {
		t.Error("Uint64 of seven bytes: no error")
	}
	if d := decoderOf([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}); d.Uint64() != 0x0807060504030201 || d.Byte() != 9 {
		t.Error("Uint64 not little-endian")
	}
}

// TestEncoderSum: a part ended with Sum reads back whole with NewDecoder
// of no magic, and with a byte changed is a checksum mismatch, as a file
// ended with Finish; Uint32 and Len place it.
func TestEncoderSum(t *testing.T) {
	e := NewEncoder("MAGIC", 0)
	from := e.Len()
	e.String("block")
	e.Uint32(0x04030201)
	e.Sum(from)
	part := string(e.b[from:])
	file := e.Finish()
	if sum := crc32.Checksum(file, Castagnoli); sum != CRCResidue {
		t.Fatalf("file checksum residue %#x", sum)
	}
	for _, tc := range []struct {
		name string
		part string
		ok   bool
	}{
		{"intact", part, true},
		{"changed", part[:1] + "X" + part[2:], false},
		{"cut", part[:len(part)-1], false},
	} {
		d, err := NewDecoder(tc.part, crc32.Checksum([]byte(tc.part), Castagnoli), "", errTestDamaged)
		if !tc.ok {
			if !errors.Is(err, errTestDamaged) {
				t.Errorf("%s: error %v, want damaged", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if s, v := d.String(), d.Byte(); s != "block" || v != 1 || d.Byte() != 2 || d.Byte() != 3 || d.Byte() != 4 || d.Close() != nil {
			t.Errorf("%s: read %q %d, %v", tc.name, s, v, d.Err())
		}
	}
}
