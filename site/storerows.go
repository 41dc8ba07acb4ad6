package site

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
)

// A minute that does not read the lists touches a few hundred of the
// record's rows: those its results, its ledger's changes and its expiries
// name, and the index parts they are in. Its rows are not decoded whole:
// readStore reads state.bin's head (storebase.go), which holds what every
// minute needs of all rows (each one's id, where it ends and its protocol
// version, a byte of facts: rowFacts, and when its files expire), counts
// the rows for index.json's totals and notes those paused (rowCounts),
// and decodes the rows due by the minute's time. Any other row is decoded
// from the file, kept open, the first time it is asked for (store.row),
// its block of numbers read and checked.
// A process starts with an empty heap: a million rows decoded are 104 MB
// of memory written, and its pages faulted in, whatever the minute does.
// The rows decoded are kept side by side (lazyRows.dense), not at their
// places among every row's, where the few a minute touches would fault in
// a page each.

// lazyRows is what a store keeps of the rows of its base, a v6 or v7 state.bin
// read lazily, while any is not decoded yet.
type lazyRows struct {
	file    io.Closer   // state.bin, closed by close; nil for a reader that needs none
	path    string      // its path, for errors ("" for a reader that has none)
	at      io.ReaderAt // the base as read: its rows' numbers are at numsAt
	numsAt  int64
	sums    string    // of a v7 base, the checksum of each block of rows' numbers (storebase.go); "" when checked whole as read
	facts   string    // a row's facts (factsByte), while it is not decoded
	numbers []uint32  // the protocol numbers (protocolNumber) of the base's versions, by their index there
	slot    []int32   // a row: 1 + where it is in dense once decoded, 0 before
	dense   [][]row   // the rows decoded, denseChunk a chunk: a row's address stays until loadAll
	decoded int       // rows decoded
	base    rowCounts // every row of the base counted as read (its facts before it is decoded)
	paused  []int     // the rows of the base paused, in ascending order
	buf     []byte    // the numbers read last (read), reused
	err     error     // the first read that failed, or the first block damaged
}

// denseChunk is the rows of a chunk of lazyRows.dense.
const denseChunk = 512

// place returns where row i is decoded to, giving it a place first if it
// has none.
func (b *lazyRows) place(i int) *row {
	if k := b.slot[i]; k != 0 {
		return &b.dense[(k-1)/denseChunk][(k-1)%denseChunk]
	}
	k := b.decoded
	if k%denseChunk == 0 {
		b.dense = append(b.dense, make([]row, denseChunk))
	}
	b.decoded++
	b.slot[i] = int32(k + 1)
	return &b.dense[k/denseChunk][k%denseChunk]
}

// factsByte packs what index.json counts and the pause record compares of
// a row: its status (data.Outcomes has fewer than 16), paused, speaks
// 2026-07-28, and its tool problems as none, some or not read yet.
func factsByte(status uint8, paused, speaks bool, problems int32) byte {
	b := status & 0x0f
	if paused {
		b |= 0x10
	}
	if speaks {
		b |= 0x20
	}
	switch {
	case problems < 0:
		b |= 0x80
	case problems > 0:
		b |= 0x40
	}
	return b
}

// rowFacts are the facts of a row, decoded or not (store.factsOf).
type rowFacts struct {
	status   uint8
	paused   bool
	speaks   bool
	problems int32 // -1 not read yet, 1 for some when the row is not decoded
	protocol uint32
}

// rowCounts is what index.json's head counts of a store's rows
// (rowTotals).
type rowCounts struct {
	status                    [16]int // by status index (data.Outcomes)
	pending, problems, speaks int
	versions                  []int // by protocol number; the facts of a row not read yet count nothing but its status
}

// add counts a row of facts f k times (-1 takes one away).
func (c *rowCounts) add(f rowFacts, k int) {
	c.status[f.status] += k
	switch {
	case f.problems < 0:
		c.pending += k
		return
	case f.problems > 0:
		c.problems += k
	}
	if f.speaks {
		c.speaks += k
	}
	c.addVersion(f.protocol, k)
}

// addVersion counts k rows whose facts are read of protocol number p; 0
// (none) counts nothing.
func (c *rowCounts) addVersion(p uint32, k int) {
	if p == 0 {
		return
	}
	if int(p) >= len(c.versions) {
		c.versions = append(c.versions, make([]int, int(p)+1-len(c.versions))...)
	}
	c.versions[p] += k
}

// counts returns the counts of every row: counted whole when none is left
// to decode, else the base's as read, each row decoded since taken away
// as the base had it and counted as it is.
func (s *store) counts() rowCounts {
	var c rowCounts
	if s.lazy == nil {
		for i := range s.rows {
			c.add(s.factsOf(i), 1)
		}
		return c
	}
	c = s.lazy.base
	c.versions = slices.Clone(c.versions)
	for i := range s.decoded() {
		c.add(s.baseFacts(i), -1)
		c.add(s.factsOf(i), 1)
	}
	return c
}

// n returns the number of rows.
func (s *store) n() int {
	if s.lazy != nil {
		return len(s.lazy.slot)
	}
	return len(s.rows)
}

// isLoaded reports whether row i is decoded.
func (s *store) isLoaded(i int) bool {
	return s.lazy == nil || s.lazy.slot[i] != 0
}

// row returns row i, decoded from the base's file if it is not yet; a
// failed read is kept for err, and the row returned is zero. A publish
// decodes the rows its workers render before they start (loadRows): row
// writes s only for a row not decoded yet.
func (s *store) row(i int) *row {
	b := s.lazy
	if b == nil {
		return &s.rows[i]
	}
	if b.slot[i] == 0 {
		s.loadRange(i, i+1)
		if b.slot[i] == 0 {
			return &row{} // not read: err says why
		}
	}
	return b.place(i)
}

// loadRows decodes the rows is, in ascending order, that are not yet;
// adjacent ones are read at once.
func (s *store) loadRows(is []int) error {
	for k := 0; k < len(is); {
		j := k + 1
		for j < len(is) && is[j] == is[j-1]+1 {
			j++
		}
		s.loadRange(is[k], is[j-1]+1)
		k = j
	}
	return s.err()
}

// loadRange decodes rows lo to hi-1 that are not yet, reading their
// numbers from the base's file at once; of a v7 base, a row whose numbers
// are not its facts is damage.
func (s *store) loadRange(lo, hi int) {
	b := s.lazy
	if b == nil || b.err != nil {
		return
	}
	for lo < hi && s.isLoaded(lo) {
		lo++
	}
	for hi > lo && s.isLoaded(hi-1) {
		hi--
	}
	if lo == hi {
		return
	}
	buf, first, err := b.read(lo, hi)
	if err != nil {
		b.err = err
		return
	}
	for i := lo; i < hi; i++ {
		if s.isLoaded(i) {
			continue
		}
		nums := buf[(i-first)*rowWidth:]
		if b.sums != "" {
			if fb, ok := numbersFacts(nums); !ok || fb != b.facts[i] {
				b.err = fmt.Errorf("%w: row %d: its numbers are not its facts", errCorrupt, i)
				return
			}
		}
		s.decodeBase(i, nums)
	}
}

// decodeBase decodes row i of the base from its numbers nums, checked
// when the file was read (streamed.rows), and marks it decoded.
func (s *store) decodeBase(i int, nums []byte) {
	var r row
	decodeFixed(nums, &r)
	r.protocol = s.baseProtocol(i)
	s.put(i, r)
}

// baseProtocol returns the number of the protocol version of row i of
// the base.
func (s *store) baseProtocol(i int) uint32 {
	return s.lazy.numbers[u32At(s.baseRows.versionOf, i)]
}

// put sets row i to r, of the same id, and marks it decoded.
func (s *store) put(i int, r row) {
	b := s.lazy
	if b == nil {
		r.idAt, r.idLen = s.rows[i].idAt, s.rows[i].idLen
		s.rows[i] = r
		return
	}
	from, end := s.baseSpan(i)
	r.idAt, r.idLen = from, end-from
	*b.place(i) = r
}

// loadAll decodes every row into s.rows, for what reads or changes all
// of them (the lists read, the ledger read whole, a new base written),
// and closes the base's file. A row's address from row before is not
// the row's after.
func (s *store) loadAll() error {
	b := s.lazy
	if b == nil {
		return nil
	}
	const block = (64 << 10) / rowWidth / rowsBlock * rowsBlock // whole blocks of a v7 base
	for lo := 0; lo < s.n(); lo += block {
		s.loadRange(lo, min(lo+block, s.n()))
	}
	if err := s.err(); err != nil {
		return err
	}
	rows := make([]row, s.n())
	for i := range rows {
		rows[i] = *b.place(i)
	}
	if b.file != nil {
		b.file.Close()
	}
	s.rows, s.lazy = rows, nil
	return nil
}

// err returns the first read of a row that failed, naming the file.
func (s *store) err() error {
	if s.lazy == nil || s.lazy.err == nil {
		return nil
	}
	return fmt.Errorf("read site state %s: %w", s.lazy.path, s.lazy.err)
}

// decodedRows returns how many rows were decoded: every one when none is
// left to decode.
func (s *store) decodedRows() int {
	if s.lazy == nil {
		return s.n()
	}
	return s.lazy.decoded
}

// close closes the base's file, once the publish is done: its rows not
// decoded are then decoded no more.
func (s *store) close() {
	if b := s.lazy; b != nil {
		if b.file != nil {
			b.file.Close()
			b.file = nil
		}
		if b.err == nil {
			b.err = errors.New("closed with rows not decoded")
		}
	}
}

// idOf returns the id of row i, decoded or not.
func (s *store) idOf(i int) string {
	if s.lazy != nil {
		return s.baseID(i)
	}
	return s.id(&s.rows[i])
}

// factsOf returns the facts of row i, decoded or not.
func (s *store) factsOf(i int) rowFacts {
	if l := s.lazy; l != nil && l.slot[i] == 0 {
		return s.baseFacts(i)
	}
	r := s.row(i)
	return rowFacts{status: r.status, paused: r.Paused, speaks: r.Speaks, problems: r.Problems, protocol: r.protocol}
}

// baseFacts returns the facts of row i as the base has them (a store
// read lazily).
func (s *store) baseFacts(i int) rowFacts { return factsOfByte(s.lazy.facts[i], s.baseProtocol(i)) }

// factsOfByte returns the facts of a facts byte (factsByte) and a
// protocol number.
func factsOfByte(b byte, protocol uint32) rowFacts {
	return rowFacts{status: b & 0x0f, paused: b&0x10 != 0, speaks: b&0x20 != 0, problems: int32(b>>6&1) - int32(b>>7), protocol: protocol}
}

// pausedRows returns the indexes of the rows paused, decoded or not, in
// ascending order: of a store read lazily, those of the base paused and
// those decoded, looked at again.
func (s *store) pausedRows() []int {
	var out []int
	if s.lazy == nil {
		for i := range s.rows {
			if s.rows[i].Paused {
				out = append(out, i)
			}
		}
		return out
	}
	look := slices.Collect(s.decoded())
	look = append(look, s.lazy.paused...)
	slices.Sort(look)
	for _, i := range slices.Compact(look) {
		if s.factsOf(i).paused {
			out = append(out, i)
		}
	}
	return out
}

// decoded yields the indexes of the rows decoded, in ascending order:
// every row when none is left to decode.
func (s *store) decoded() iter.Seq[int] {
	return func(yield func(int) bool) {
		if s.lazy == nil {
			for i := range s.rows {
				if !yield(i) {
					return
				}
			}
			return
		}
		for i, k := range s.lazy.slot {
			if k != 0 && !yield(i) {
				return
			}
		}
	}
}

// anyFactsPending reports whether a row's facts are not read yet.
func (s *store) anyFactsPending() bool { return s.counts().pending > 0 }
