package site

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// The site's record is state.bin, its base, and state-delta.bin, what
// changed since: a publish that renders a thousand servers of a million
// writes their rows, not the million. The delta holds, with data's codec:
// deltaMagic, the last four bytes of the base it applies to (its
// checksum), the JSON of meta whole, the number of rows and each row that
// differs from the base's, as its index and encodeRow's bytes, the
// record of the index's parts whole (encodeParts: some 10 bytes a part;
// a minute of a thousand checks at a million servers changes a thousand
// parts of 17,000, every one within twenty minutes, so a delta of them
// would soon be whole too), then the checksum. Each delta holds every row
// changed since the base, so it replaces the one before. A delta of more
// than a deltaShare of the rows, or a record whose rows or order changed
// (a new list), is written as a new base instead, and the delta removed
// after it. A delta of deltaMagicV1 has the parts in its meta's JSON.
const (
	deltaMagic   = "plug.directory site state delta v2\n"
	deltaMagicV1 = "plug.directory site state delta v1\n"
)

// deltaShare is the largest delta, as a fraction of the rows, but a
// delta of deltaRows rows is always one: beyond, a new base costs little
// more to write and less to read.
const (
	deltaShare = 8
	deltaRows  = 256
)

// deltaPath is where the delta of the site's record is.
func deltaPath(dataDir string) string { return filepath.Join(dataDir, "site", "state-delta.bin") }

// save stages in w what the site's record needs written: a delta against
// its base when one can say it, else a new base and the removal of the
// delta; nothing when it is as it was read. touched are the indexes of
// the only rows that may differ from those read, in ascending order (a
// publish that did not read the lists changes only the rows it
// rendered): the others are neither encoded nor compared. nil means any
// row may have changed, and their order.
func (s *store) save(w *writer, dataDir string, touched []int) error {
	if touched != nil {
		d, empty, ok, err := s.deltaOf(touched)
		if err != nil {
			return err
		}
		if ok {
			return s.stageDelta(w, dataDir, d, empty)
		}
	}
	enc, err := s.encode()
	if err != nil {
		return err
	}
	if d, empty, ok := s.delta(enc); ok {
		return s.stageDelta(w, dataDir, d, empty)
	}
	if b := enc.file(); string(b) != s.base {
		if err := w.stage(data.Dir(dataDir).SiteStore(), b); err != nil {
			return err
		}
	}
	if s.deltaText != "" {
		w.stageRemove(deltaPath(dataDir))
	}
	return nil
}

// stageDelta stages the delta d, or the removal of the one read when the
// record is as its base has it (empty); nothing when it is as read.
func (s *store) stageDelta(w *writer, dataDir string, d []byte, empty bool) error {
	switch {
	case empty && s.deltaText == "":
		return nil // as read
	case empty:
		w.stageRemove(deltaPath(dataDir))
		return nil
	case string(d) == s.deltaText:
		return nil
	}
	return w.stage(deltaPath(dataDir), d)
}

// deltaOf returns the record as a delta against the base, where only the
// rows touched and those of the delta read may differ from the base's;
// ok is false when no delta can say it: no base, or too many rows changed.
func (s *store) deltaOf(touched []int) (b []byte, empty, ok bool, err error) {
	if s.base == "" || len(s.baseEnds) != len(s.Rows) {
		return nil, false, false, nil
	}
	mb, err := json.Marshal(s.Meta)
	if err != nil {
		return nil, false, false, fmt.Errorf("encode site state: %w", err)
	}
	var rows []byte
	var changed, ends []int
	for _, i := range mergeSorted(touched, s.deltaRows) {
		e := durable.NewEncoder("", 96)
		encodeRow(e, &s.Rows[i])
		if string(e.Bytes()) == s.baseRow(i) {
			continue
		}
		if changed = append(changed, i); len(changed) > max(len(s.Rows)/deltaShare, deltaRows) {
			return nil, false, false, nil
		}
		rows = append(rows, e.Bytes()...)
		ends = append(ends, len(rows))
	}
	parts := encodeParts(s.Meta.Index)
	if len(changed) == 0 && string(mb) == s.baseMeta && string(parts) == s.baseParts {
		return nil, true, true, nil
	}
	return s.encodeDelta(mb, rows, changed, ends, parts), false, true, nil
}

// baseRow returns the bytes of row i in the base.
func (s *store) baseRow(i int) string {
	from := uint32(s.baseRows)
	if i > 0 {
		from = s.baseEnds[i-1]
	}
	return s.base[from:s.baseEnds[i]]
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

// delta returns enc as a delta against the base, and whether it is empty
// (the record as the base has it); ok is false when no delta can say it:
// no base, other rows or another order, or too many rows changed.
func (s *store) delta(enc encoded) (b []byte, empty, ok bool) {
	if s.base == "" || len(s.baseEnds) != len(enc.ends) || string(enc.order) != s.baseOrder {
		return nil, false, false
	}
	var changed []int
	from, baseFrom := 0, s.baseRows
	for i, end := range enc.ends {
		baseEnd := int(s.baseEnds[i])
		if string(enc.rows[from:end]) != s.base[baseFrom:baseEnd] {
			// The same server, or the rows are others: a new base.
			id := binary.AppendUvarint(nil, uint64(len(s.Rows[i].ID)))
			if !strings.HasPrefix(s.base[baseFrom:baseEnd], string(id)+s.Rows[i].ID) {
				return nil, false, false
			}
			if changed = append(changed, i); len(changed) > max(len(enc.ends)/deltaShare, deltaRows) {
				return nil, false, false
			}
		}
		from, baseFrom = int(end), baseEnd
	}
	if len(changed) == 0 && string(enc.meta) == s.baseMeta && string(enc.parts) == s.baseParts {
		return nil, true, true
	}
	var rows []byte
	ends := make([]int, len(changed))
	for k, i := range changed {
		start := uint32(0)
		if i > 0 {
			start = enc.ends[i-1]
		}
		rows = append(rows, enc.rows[start:enc.ends[i]]...)
		ends[k] = len(rows)
	}
	return s.encodeDelta(enc.meta, rows, changed, ends, enc.parts), false, true
}

// encodeDelta returns the delta of the meta's JSON, the rows changed,
// whose bytes end in rows at ends, and the record of the parts.
func (s *store) encodeDelta(meta, rows []byte, changed, ends []int, parts []byte) []byte {
	e := durable.NewEncoder(deltaMagic, len(meta)+len(rows)+len(changed)*3+len(parts)+16)
	e.Raw([]byte(s.base[len(s.base)-4:]))
	e.String(string(meta))
	e.Uvarint(uint64(len(changed)))
	from := 0
	for k, i := range changed {
		e.Uvarint(uint64(i))
		e.Raw(rows[from:ends[k]])
		from = ends[k]
	}
	e.Raw(parts)
	return e.Finish()
}

// readDelta reads state-delta.bin over s, read from its base. A missing
// one is no error; one of another base (a crash between a new base and
// the removal of the delta before it) is left unread, as the base holds
// all it says. Errors wrap errCorrupt and name the file.
func (s *store) readDelta(dataDir string) error {
	path := deltaPath(dataDir)
	text, sum, err := durable.ReadSummed(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read site state delta: %w", err)
	}
	s.deltaText = text
	if err := s.applyDelta(text, sum); err != nil {
		return fmt.Errorf("read site state delta %s: %w", path, err)
	}
	return nil
}

// applyDelta applies the delta text, whose CRC-32C is sum, to s.
func (s *store) applyDelta(text string, sum uint32) error {
	magic, v1 := deltaMagic, strings.HasPrefix(text, deltaMagicV1)
	if v1 {
		magic = deltaMagicV1
	}
	d, err := durable.NewDecoder(text, sum, magic, errCorrupt)
	if err != nil {
		return err
	}
	if d.Raw(4) != s.base[len(s.base)-4:] {
		return nil // another base's
	}
	m, err := decodeMeta(d.String())
	if d.Err() == nil && err != nil {
		return err
	}
	n := d.Count(12)
	var rows []int
	for range n {
		i := d.Uvarint()
		if i >= uint64(len(s.Rows)) {
			d.Fail("row index")
			break
		}
		var r row
		if decodeRow(d, &r, false, false); d.Err() != nil {
			break
		}
		if r.ID != s.Rows[i].ID {
			d.Fail("row id")
			break
		}
		s.Rows[i] = r
		rows = append(rows, int(i))
	}
	if !v1 {
		m.Index = decodeParts(d, s.Rows)
	}
	if err := d.Close(); err != nil {
		return err
	}
	s.Meta = m
	slices.Sort(rows)
	s.deltaRows = rows
	s.factsPending = false
	for i := range s.Rows {
		s.factsPending = s.factsPending || s.Rows[i].Problems < 0
	}
	return nil
}
