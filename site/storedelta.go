package site

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// The site's record is state.bin, its base, and state-delta.bin, the log
// of what changed since: a publish that renders a thousand servers of a
// million appends their rows, not the million, and not every row changed
// since the base either. The log holds, with data's codec: logMagic, the
// last four bytes of the base it applies to (its checksum) and the
// CRC-32C of both; then a record a publish, each its length and the
// CRC-32C of that (four bytes each), then the JSON of meta whole, the
// number of rows and each row that changed, as its index and
// appendLogRow's bytes, the number of the index's parts whose hash changed and each
// one's index and hash, and the CRC-32C of the record. A publish killed
// while it appended leaves a record cut short, which the next one reads
// as never written and writes over; a record whole but whose checksum
// fails is damage. A log past a deltaShare of the base's bytes, or a
// record whose rows or order changed (a new list) or whose parts are laid
// out anew, is written as a new base instead, and the log removed after
// it. A delta of deltaMagicV1, the layout before the log (every row
// changed since the base, the parts in its meta's JSON), is read, and
// so is a log of logMagicV1, whose rows are of the layout before v6
// (decodeRow): the next publish writes a new base of either.
const (
	logMagic     = "plug.directory site state log v2\n"
	logMagicV1   = "plug.directory site state log v1\n"
	deltaMagicV1 = "plug.directory site state delta v1\n"
)

// deltaShare is the largest log, as a fraction of the base's bytes, but a
// log of deltaMin bytes is always one: beyond, a new base costs little
// more to write and less to read.
const (
	deltaShare = 8
	deltaMin   = 64 << 10
)

// logHeader is the length of the log's header: its magic, the base's
// checksum and the header's own.
const logHeader = len(logMagic) + 8

// logRead is what the log read holds, for the next record.
type logRead struct {
	fresh  bool           // no log this base's can be appended to: none, another base's, or one of the layout before
	exists bool           // a file is at the log's path
	end    int64          // bytes up to its last whole record, where the next is appended
	rows   map[int]string // rows it sets, by index: their bytes in the last record that sets each; none in a fresh log
	meta   string         // the JSON of meta as last read: the base's or the last record's
	parts  []indexPart    // the index's parts as read: the base's or the last record's
	set    []int          // the indexes of rows, in ascending order
}

// deltaPath is where the log of the site's record is.
func deltaPath(dataDir string) string { return filepath.Join(dataDir, "site", "state-delta.bin") }

// save stages in w what the site's record needs written: a record
// appended to its log when one can say it, else a new base and the
// removal of the log; nothing when it is as it was read. touched are the
// indexes of the only rows that may differ from those read, in ascending
// order (a publish that did not read the lists changes only the rows it
// rendered): the others are neither encoded nor compared. nil means any
// row may have changed, and their order.
func (s *store) save(w *writer, dataDir string, touched []int) error {
	if err := s.err(); err != nil {
		return err // a row could not be read: it would be saved as zero
	}
	var enc encoded
	rec, empty, ok := []byte(nil), false, false
	logRow := func(i int) []byte {
		e := durable.NewEncoder("", 128)
		s.appendLogRow(e, s.row(i))
		return e.Bytes()
	}
	var cands []int
	switch {
	case s.baseSum == "" || s.old:
	case touched != nil:
		// A fresh log says every row that differs from the base.
		cands = touched
		if s.log.fresh {
			cands = mergeSorted(touched, s.log.set)
		}
	default:
		var err error
		if enc, err = s.encode(); err != nil {
			return err
		}
		if enc.n == s.baseN && string(enc.order) == s.baseOrder {
			cands = seq(0, enc.n)
		}
	}
	if cands != nil {
		// A base that cannot be read again is written anew.
		if nums, err := s.baseNumbers(dataDir, cands); err == nil {
			rec, empty, ok = s.record(cands, logRow, nums)
		}
	}
	limit := max(s.baseSize/deltaShare, deltaMin)
	switch {
	case !ok:
	case empty && s.log.fresh && s.log.exists:
		w.stageRemove(deltaPath(dataDir))
		return nil
	case empty:
		return nil
	case s.log.fresh && int64(logHeader+len(rec)) <= limit:
		return w.stage(deltaPath(dataDir), s.logHead(), rec)
	case !s.log.fresh && s.log.end+int64(len(rec)) <= limit:
		w.stageAppend(deltaPath(dataDir), rec, s.log.end)
		return nil
	}
	if enc.rows == nil {
		var err error
		if enc, err = s.encode(); err != nil {
			return err
		}
	}
	if err := w.stage(data.Dir(dataDir).SiteStore(), enc.file()); err != nil {
		return err
	}
	if s.log.exists {
		w.stageRemove(deltaPath(dataDir))
	}
	return nil
}

// record returns the log's next record: meta, the rows of cands whose
// bytes (rowBytes) differ from those read, or from the base's for a
// fresh log, and the parts whose hash changed; empty when it would say
// nothing new. ok is false when no record can say it: a row of another
// server, or the parts laid out otherwise than the base's.
func (s *store) record(cands []int, rowBytes func(i int) []byte, nums func(i int) string) (rec []byte, empty, ok bool) {
	parts := s.Meta.Index
	if len(parts) != len(s.baseIndex) {
		return nil, false, false
	}
	var changedParts []int
	for k, op := range parts {
		if op.Rows != s.baseIndex[k].Rows {
			return nil, false, false
		}
		if op.Sum != s.log.parts[k].Sum {
			changedParts = append(changedParts, k)
		}
	}
	mb, err := json.Marshal(s.Meta)
	if err != nil {
		return nil, false, false
	}
	e := durable.NewEncoder("", len(mb)+len(cands)*96+len(changedParts)*12+16)
	e.String(string(mb))
	rows := durable.NewEncoder("", len(cands)*96)
	n := 0
	for _, i := range cands {
		b := rowBytes(i)
		ref, ok := s.log.rows[i]
		if !ok {
			ref = s.baseRow(i, nums)
		}
		if string(b) == ref {
			continue
		}
		// The same server, or the rows are others: a new base.
		if i >= s.baseN || s.baseID(i) != s.idOf(i) {
			return nil, false, false
		}
		rows.Uvarint(uint64(i))
		rows.Raw(b)
		n++
	}
	if n == 0 && len(changedParts) == 0 && string(mb) == s.log.meta {
		return nil, true, true
	}
	e.Uvarint(uint64(n))
	e.Append(rows)
	e.Uvarint(uint64(len(changedParts)))
	for _, k := range changedParts {
		e.Uvarint(uint64(k))
		e.Uint64(parts[k].Sum)
	}
	e.Sum(0)
	body := e.Bytes()
	frame := durable.AppendRecordHead(make([]byte, 0, durable.RecordHead+len(body)), len(body))
	return append(frame, body...), false, true
}

// logHead returns the header of a log of the base.
func (s *store) logHead() []byte {
	b := append([]byte(logMagic), s.baseSum...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, durable.Castagnoli))
}

// baseID returns the id of row i of the base, a v6 or v7 one.
func (s *store) baseID(i int) string {
	from, end := s.baseSpan(i)
	return s.baseRows.ids[from:end]
}

// baseSpan returns where the id of row i of the base, a v6 or v7 one, starts
// and ends in its ids.
func (s *store) baseSpan(i int) (from, end uint32) {
	ends := s.baseRows.ends
	if i > 0 {
		from = u32At(ends, i-1)
	}
	return from, u32At(ends, i)
}

// u32At returns the i-th of the numbers of text, four bytes each,
// little-endian: a function of its own, not le32, so that it is inlined
// where a million ids are cut a minute.
func u32At(text string, i int) uint32 {
	b := text[4*i : 4*i+4]
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// baseRow returns the bytes of row i of the base, a v6 or v7 one, whose
// numbers nums returns, as the log holds a row (appendLogRow); "" for a
// row past the base's.
func (s *store) baseRow(i int, nums func(i int) string) string {
	if i >= s.baseN {
		return ""
	}
	rt := &s.baseRows
	version := ""
	if v := le32(rt.versionOf[4*i:]); v > 0 {
		version = rt.versions[v-1]
	}
	id := s.baseID(i)
	e := durable.NewEncoder("", 2*binary.MaxVarintLen64+len(id)+len(version)+rowWidth)
	e.String(id)
	e.String(version)
	e.Raw([]byte(nums(i)))
	return string(e.Bytes())
}

// baseNumbers returns the numbers of the rows cands of the base (a v6 or
// v7 one), which readStore did not keep, read again from its file,
// state.bin under dataDir: a read a row, or the whole of them when cands
// are more than one row in 64 (a save that compares every row). Their
// blocks are not checked: a row read damaged differs from the row saved,
// which the log then holds. Rows the log sets
// are not read: record compares them with the log's. A file that is not
// the base read (its size and checksum; the site's lock keeps other
// publishes out, not a hand) is an error.
func (s *store) baseNumbers(dataDir string, cands []int) (func(i int) string, error) {
	f, err := os.Open(data.Dir(dataDir).SiteStore())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sum := make([]byte, 4)
	if fi, err := f.Stat(); err != nil || fi.Size() != s.baseSize {
		return nil, fmt.Errorf("read site state: not the base read")
	}
	if _, err := f.ReadAt(sum, s.baseSumAt); err != nil || string(sum) != s.baseSum {
		return nil, fmt.Errorf("read site state: not the base read")
	}
	at := s.baseRows.numsAt
	if len(cands) > s.baseN/64 {
		all := make([]byte, s.baseN*rowWidth)
		if _, err := f.ReadAt(all, at); err != nil {
			return nil, err
		}
		return func(i int) string { return string(all[i*rowWidth : (i+1)*rowWidth]) }, nil
	}
	nums := map[int]string{}
	b := make([]byte, rowWidth)
	for _, i := range cands {
		if _, inLog := s.log.rows[i]; inLog || i >= s.baseN {
			continue
		}
		if _, err := f.ReadAt(b, at+int64(i*rowWidth)); err != nil {
			return nil, err
		}
		nums[i] = string(b)
	}
	return func(i int) string { return nums[i] }, nil
}

// mergeSorted returns the union of two ascending lists of indexes.
func mergeSorted(a, b []int) []int {
	out := make([]int, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		switch {
		case len(b) == 0 || len(a) > 0 && a[0] < b[0]:
			out, a = append(out, a[0]), a[1:]
		case len(a) == 0 || b[0] < a[0]:
			out, b = append(out, b[0]), b[1:]
		default:
			out, a, b = append(out, a[0]), a[1:], b[1:]
		}
	}
	return out
}

// seq returns lo, lo+1, ..., hi-1.
func seq(lo, hi int) []int {
	s := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		s = append(s, i)
	}
	return s
}

// readDelta reads state-delta.bin over s, read from its base: a log, or a
// delta of the layout before. A missing one is no error; one of another
// base (a crash between a new base and the removal of the log before it)
// is left unread, as the base holds all it says. Errors wrap errCorrupt
// and name the file.
func (s *store) readDelta(dataDir string) error {
	path := deltaPath(dataDir)
	text, sum, err := durable.ReadSummed(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read site state delta: %w", err)
	}
	s.log.exists = true
	if strings.HasPrefix(text, deltaMagicV1) {
		err = s.applyDelta(text, sum)
	} else {
		err = s.applyLog(text)
	}
	if err != nil {
		return fmt.Errorf("read site state delta %s: %w", path, err)
	}
	// The rows it set may have had their facts read, or not.
	s.factsPending = s.anyFactsPending()
	return nil
}

// applyLog applies the records of the log text to s.
func (s *store) applyLog(text string) error {
	v1 := strings.HasPrefix(text, logMagicV1)
	if len(text) < logHeader || !v1 && !strings.HasPrefix(text, logMagic) {
		return fmt.Errorf("%w: not a log", errCorrupt)
	}
	if binary.LittleEndian.Uint32([]byte(text[logHeader-4:logHeader])) != crc32.Checksum([]byte(text[:logHeader-4]), durable.Castagnoli) {
		return fmt.Errorf("%w: log header", errCorrupt)
	}
	if text[len(logMagic):logHeader-4] != s.baseSum {
		return nil // another base's
	}
	rows, last := map[int]string{}, 0
	off, err := durable.EachRecord(text, logHeader, 0, errCorrupt, func(off int, body string) error {
		if err := s.applyRecord(body, v1, rows); err != nil {
			return fmt.Errorf("record at byte %d: %w", off, err)
		}
		last = off
		return nil
	})
	if err != nil {
		return err
	}
	if last > 0 {
		// Each record holds meta whole: the last one's is read.
		m, err := decodeMeta(s.log.meta)
		if err != nil {
			return fmt.Errorf("record at byte %d: %w", last, err)
		}
		m.Index = s.Meta.Index
		s.Meta = m
	}
	s.log.fresh, s.log.end, s.log.rows = false, int64(off), rows
	s.log.parts = slices.Clone(s.Meta.Index)
	s.log.set = make([]int, 0, len(rows))
	for i := range rows {
		s.log.set = append(s.log.set, i)
	}
	slices.Sort(s.log.set)
	return nil
}

// applyRecord applies one record of the log to s, noting in rows the
// bytes of each row it sets, but its meta: its JSON becomes s.log.meta,
// which applyLog reads once, the last record's. v1: the record is of a
// log v1, its rows of the layout before v6.
func (s *store) applyRecord(body string, v1 bool, rows map[int]string) error {
	d, err := durable.NewDecoder(body, crc32.Checksum([]byte(body), durable.Castagnoli), "", errCorrupt)
	if err != nil {
		return err
	}
	mj := d.String()
	s.decodeRows(d, v1, func(i, from, to int) { rows[i] = body[from:to] })
	parts := s.Meta.Index
	for range d.Count(9) {
		k, sum := d.Uvarint(), d.Uint64()
		if k >= uint64(len(parts)) {
			d.Fail("part index")
			break
		}
		parts[k].Sum = sum
	}
	if err := d.Close(); err != nil {
		return err
	}
	s.log.meta = mj
	return nil
}

// decodeRows reads a number of rows, each its index and appendLogRow's
// bytes (decodeRow's when old: a log v1 or a delta v1), over s's rows, and
// calls each with a row's index and where its bytes start and end in d.
// A row of another server fails d.
func (s *store) decodeRows(d *durable.Decoder, old bool, each func(i, from, to int)) {
	var pc protocolCache
	for range d.Count(12) {
		i := d.Uvarint()
		if i >= uint64(s.n()) {
			d.Fail("row index")
			return
		}
		from := d.Offset()
		var r row
		var id string
		if old {
			id = decodeRow(d, &r, false, false, &pc)
		} else {
			id = decodeLogRow(d, &r, &pc)
		}
		if d.Err() != nil {
			return
		}
		if id != s.idOf(int(i)) {
			d.Fail("row id")
			return
		}
		s.put(int(i), r) // its id in s.ids, not in d's text
		each(int(i), from, d.Offset())
	}
}

// applyDelta applies a delta of the layout before the log, deltaMagicV1,
// whose CRC-32C is sum, to s: the next publish writes a new base.
func (s *store) applyDelta(text string, sum uint32) error {
	d, err := durable.NewDecoder(text, sum, deltaMagicV1, errCorrupt)
	if err != nil {
		return err
	}
	if d.Raw(4) != s.baseSum {
		return nil // another base's
	}
	m, err := decodeMeta(d.String())
	if d.Err() == nil && err != nil {
		return err
	}
	var set []int
	s.decodeRows(d, true, func(i, _, _ int) { set = append(set, i) })
	if err := d.Close(); err != nil {
		return err
	}
	s.Meta = m
	slices.Sort(set)
	s.log.set = set
	return nil
}
