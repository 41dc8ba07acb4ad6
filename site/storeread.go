package site

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"

	"plug.directory/prober/internal/durable"
)

// readStore reads state.bin, size bytes of r: a base of v7 its head
// (readBase, storebase.go), check blocks of its rows' numbers and the
// rows whose files expire by due (Unix ms); any other row is decoded from
// r when first asked for (storerows.go). A base of v6 is read a block at
// a time: its ids, where each ends and each one's protocol version are
// kept, and a byte of each row's facts; its numbers are checked 64 KB at
// a time and not kept, but those of the rows due, decoded. A base of a
// layout before v6 is read and decoded whole (decodeStore). The checksum
// of one before v7 is checked once all is read, and that error comes
// first: a damaged file is named as such, whatever its bytes made of what
// was read before. Errors wrap errCorrupt, but the reader's own.
func readStore(r io.ReaderAt, size, due int64, check int) (*store, error) {
	pre := make([]byte, min(size, int64(len(storeMagic)+16)))
	if _, err := r.ReadAt(pre, 0); err != nil {
		return nil, shortFile(err)
	}
	if strings.HasPrefix(string(pre), storeMagic) {
		return readBase(r, pre, size, due, check)
	}
	crc := crc32.New(durable.Castagnoli)
	br := bufio.NewReaderSize(io.TeeReader(io.NewSectionReader(r, 0, size), crc), 64<<10)
	if magic, err := br.Peek(len(storeMagicV6)); err != nil || string(magic) != storeMagicV6 {
		var text strings.Builder
		text.Grow(int(size))
		if _, err := io.Copy(&text, br); err != nil {
			return nil, err
		}
		return decodeStore(text.String(), crc.Sum32())
	}
	h := &streamed{r: br, left: size}
	s, err := h.store(r, due)
	if _, cerr := io.Copy(io.Discard, br); cerr != nil {
		return nil, cerr
	}
	if crc.Sum32() != durable.CRCResidue {
		return nil, fmt.Errorf("%w: checksum mismatch", errCorrupt)
	}
	if h.readErr != nil {
		return nil, h.readErr
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errCorrupt, err)
	}
	return s, nil
}

// streamed reads the fields of a v6 base one after the other: off is
// where the next one starts, left how many bytes the file has past it.
// readErr is the first error of the reader itself (not of the bytes).
type streamed struct {
	r         *bufio.Reader
	off, left int64
	readErr   error
}

// errShort is the error of a field that goes past the end of the file.
var errShort = errors.New("a field past the end of the file")

// uvarint reads a uvarint, as binary.ReadUvarint does.
func (h *streamed) uvarint() (uint64, error) {
	var x uint64
	for i := range binary.MaxVarintLen64 {
		c, err := h.r.ReadByte()
		if err != nil {
			return 0, h.fail(err)
		}
		h.off, h.left = h.off+1, h.left-1
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break
			}
			return x | uint64(c)<<(7*i), nil
		}
		x |= uint64(c&0x7f) << (7 * i)
	}
	return 0, fmt.Errorf("bad number at byte %d", h.off)
}

// text reads n bytes as a string; n is checked against the bytes left,
// so that a damaged length cannot make it allocate more than the file.
func (h *streamed) text(n uint64) (string, error) {
	if n > uint64(max(h.left, 0)) {
		return "", errShort
	}
	var b strings.Builder
	b.Grow(int(n))
	_, err := io.CopyN(&b, h.r, int64(n))
	h.off, h.left = h.off+int64(n), h.left-int64(n)
	return b.String(), h.fail(err)
}

// fail returns err, noting one of the reader, and errShort for an end of
// file where a field was.
func (h *streamed) fail(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return errShort
	default:
		if h.readErr == nil {
			h.readErr = err
		}
		return err
	}
}

// store reads the base after its magic; r and due are rows'. It is
// old: the next save writes a v7 base.
func (h *streamed) store(r io.ReaderAt, due int64) (*store, error) {
	h.off, h.left = int64(len(storeMagicV6)), h.left-int64(len(storeMagicV6))
	if _, err := h.r.Discard(len(storeMagicV6)); err != nil {
		return nil, h.fail(err)
	}
	s := newStore()
	metaLen, err := h.uvarint()
	if err != nil {
		return nil, err
	}
	if s.baseMeta, err = h.text(metaLen); err != nil {
		return nil, err
	}
	if s.Meta, err = decodeMeta(s.baseMeta); err != nil {
		return nil, err
	}
	n, err := h.uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(max(h.left, 0))/(12+rowWidth) {
		return nil, fmt.Errorf("bad count at byte %d", h.off)
	}
	rt, err := h.rowsHead(int(n))
	if err != nil {
		return nil, err
	}
	if err := h.rows(s, rt, int(n), r, due); err != nil {
		return nil, err
	}
	tail, err := h.text(uint64(max(h.left, 0)))
	if err != nil {
		return nil, err
	}
	if len(tail) < 4 {
		return nil, errShort
	}
	d := durable.NewPieceDecoder(tail[:len(tail)-4], errCorrupt)
	s.Meta.Index = s.decodeParts(d)
	if err := d.Close(); err != nil {
		return nil, err
	}
	s.readAsBase(tail[len(tail)-4:], h.off-4, h.off)
	s.old = true
	return s, nil
}

// rowsHead reads the protocol versions of the rows, their ids, where each
// ends and each one's version (rowsSection), and returns them with where
// the rows' numbers start.
func (h *streamed) rowsHead(n int) (rowsText, error) {
	var rt rowsText
	k, err := h.uvarint()
	if err != nil {
		return rt, err
	}
	for range k {
		l, err := h.uvarint()
		if err != nil {
			return rt, err
		}
		v, err := h.text(l)
		if err != nil {
			return rt, err
		}
		rt.versions = append(rt.versions, v)
	}
	idsLen, err := h.uvarint()
	if err != nil || idsLen > uint64(max(h.left, 0)) {
		return rt, cmpErr(err, errShort)
	}
	cols, err := h.text(idsLen + 8*uint64(n))
	if err != nil {
		return rt, err
	}
	rt.ids, rt.ends, rt.versionOf = cols[:idsLen], cols[idsLen:int(idsLen)+4*n], cols[int(idsLen)+4*n:]
	rt.numsAt = h.off
	return rt, nil
}

// cmpErr returns err, or other when err is nil.
func cmpErr(err, other error) error {
	if err != nil {
		return err
	}
	return other
}

// rows reads the numbers of the n rows of rt and their rank order into
// s, a block at a time: each row is checked, its facts kept and counted
// (tally), and it is decoded only when its files expire by due, Unix ms,
// for the minute that reads s to render it; any other row is decoded
// from at, the file read, when it is asked for.
func (h *streamed) rows(s *store, rt rowsText, n int, at io.ReaderAt, due int64) error {
	lazy := s.readLazily(at, rt, n)
	t := newTally(lazy)
	facts := make([]byte, n)
	block := make([]byte, (64<<10)/rowWidth*rowWidth)
	for lo := 0; lo < n; lo += len(block) / rowWidth {
		b := block[:min(len(block), (n-lo)*rowWidth)]
		if _, err := io.ReadFull(h.r, b); err != nil {
			return h.fail(err)
		}
		for j := 0; j < len(b)/rowWidth; j++ {
			i, nums := lo+j, b[j*rowWidth:(j+1)*rowWidth]
			fb, ok := numbersFacts(nums)
			if !ok || !t.add(s, i, fb) {
				return fmt.Errorf("bad row at byte %d", h.off+int64(j*rowWidth))
			}
			facts[i] = fb
			if exp := int64(binary.LittleEndian.Uint64(nums[48:])); exp != 0 && exp <= due {
				s.decodeBase(i, nums)
			}
		}
		h.off, h.left = h.off+int64(len(b)), h.left-int64(len(b))
	}
	lazy.facts = string(facts)
	t.done(s)
	order, err := h.text(4 * uint64(n))
	if err != nil {
		return err
	}
	if err := checkOrder(order, n); err != nil {
		return err
	}
	s.baseOrder = order
	return nil
}
