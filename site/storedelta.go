package site

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// The site's record is state.bin, its base, and state-delta.bin, what
// changed since: a publish that renders a thousand servers of a million
// writes their rows, not the million. The delta holds, with data's codec:
// deltaMagic, the last four bytes of the base it applies to (its
// checksum), the JSON of meta whole, the number of rows and each row that
// differs from the base's, as its index and encodeRow's bytes, then the
// checksum. Each delta holds every row changed since the base, so it
// replaces the one before. A delta of more than a deltaShare of the rows,
// or a record whose rows or order changed (a new list), is written as a
// new base instead, and the delta removed after it.
const deltaMagic = "plug.directory site state delta v1\n"

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
// delta; nothing when it is as it was read.
func (s *store) save(w *writer, dataDir string) error {
	enc, err := s.encode()
	if err != nil {
		return err
	}
	if d, empty, ok := s.delta(enc); ok {
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
	if len(changed) == 0 && string(enc.meta) == s.baseMeta {
		return nil, true, true
	}
	e := durable.NewEncoder(deltaMagic, len(enc.meta)+len(changed)*90)
	e.Raw([]byte(s.base[len(s.base)-4:]))
	e.String(string(enc.meta))
	e.Uvarint(uint64(len(changed)))
	for _, i := range changed {
		start := uint32(0)
		if i > 0 {
			start = enc.ends[i-1]
		}
		e.Uvarint(uint64(i))
		e.Raw(enc.rows[start:enc.ends[i]])
	}
	return e.Finish(), false, true
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
	d, err := durable.NewDecoder(text, sum, deltaMagic, errCorrupt)
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
	}
	if err := d.Close(); err != nil {
		return err
	}
	s.Meta = m
	s.factsPending = false
	for i := range s.Rows {
		s.factsPending = s.factsPending || s.Rows[i].Problems < 0
	}
	return nil
}
