package spool

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"

	"plug.directory/prober/internal/durable"
)

// The ledger's delta (version 5) is what changed since its base, so that
// a plan, which changes a few hundred records of a million, writes those:
//
//	magic     "PDLDELTA\x05"
//	its base  the base's seq (8 bytes) and checksum (uvarint)
//	          Created, LastMinute (varints)
//	records   those whose payload differs from the base's, and those the
//	          delta it replaces held (so that a reader that applies the
//	          delta alone, not the base, learns of every record changed
//	          since the base: EachLedgerChange): the count, then each its
//	          index (uvarint: the gap after the one before) and payload
//	          (payloadSize bytes)
//	hosts     the base's hosts whose starts differ: the count, then each
//	          its index (gap) and 0 when it is gone, else 1 + how many of
//	          its first starts are dropped, how many after them are kept,
//	          and the starts appended
//	new hosts those not in the base, in the order of their names: the
//	          count, then each its name and starts
//	CRC-32C   of everything before it
//
// Starts are a count, then the first as a varint (or the gap after the
// last kept one) and the gaps after it as uvarints.
const ledgerDeltaMagic = "PDLDELTA\x05"

// deltaLimit returns the size past which a delta of a base of size bytes
// is written as a new base instead: a sixteenth, at least 64 KiB.
func deltaLimit(size int) int { return max(size/16, 64<<10) }

// delta encodes what l changed since the base b, with the records of the
// indexes kept (ascending) whether they changed or not. ok is false when
// l's servers are not b's, in the same order: a new base holds them.
func (b *ledgerBase) delta(l *Ledger, kept []int) (delta []byte, ok bool, err error) {
	if len(l.Servers) != b.n {
		return nil, false, nil
	}
	type run struct {
		same     bool
		changed  []int
		payloads []byte
	}
	runs := make([]run, parts(b.n))
	err = inRuns(b.n, len(runs), func(k, lo, hi int) error {
		r := &runs[k]
		var p [payloadSize]byte
		keep := kept[sort.SearchInts(kept, lo):]
		for i := lo; i < hi; i++ {
			s := &l.Servers[i]
			if s.ID != b.id(i) {
				return nil
			}
			if err := putPayload(p[:], s); err != nil {
				return err
			}
			held := len(keep) > 0 && keep[0] == i
			if held {
				keep = keep[1:]
			}
			if held || string(p[:]) != b.payload(i) {
				r.changed, r.payloads = append(r.changed, i), append(r.payloads, p[:]...)
			}
		}
		r.same = true
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	n := 0
	for _, r := range runs {
		if !r.same {
			return nil, false, nil
		}
		n += len(r.changed)
	}
	e := durable.NewEncoder(ledgerDeltaMagic, 64+n*(payloadSize+2))
	e.Uint64(b.seq)
	e.Uvarint(uint64(b.sum()))
	e.Varint(l.Created)
	e.Varint(l.LastMinute)
	e.Uvarint(uint64(n))
	prev := -1
	for _, r := range runs {
		for j, i := range r.changed {
			e.Uvarint(uint64(i - prev - 1))
			e.Raw(r.payloads[j*payloadSize : (j+1)*payloadSize])
			prev = i
		}
	}
	if err := b.hostsDelta(e, l); err != nil {
		return nil, false, err
	}
	return e.Finish(), true, nil
}

// hostsDelta encodes how l's hosts differ from the base's.
func (b *ledgerBase) hostsDelta(e *durable.Encoder, l *Ledger) error {
	type change struct {
		k, drop, keep int
		gone          bool
	}
	var changes []change
	found := 0
	for k := range b.nh {
		name, lo, hi := b.host(k)
		cur, ok := l.Hosts[name]
		if !ok {
			changes = append(changes, change{k: k, gone: true})
			continue
		}
		found++
		drop, keep := b.common(lo, hi, cur)
		if drop != 0 || keep != hi-lo || keep != len(cur) {
			changes = append(changes, change{k: k, drop: drop, keep: keep})
		}
	}
	e.Uvarint(uint64(len(changes)))
	prev := -1
	for _, c := range changes {
		e.Uvarint(uint64(c.k - prev - 1))
		prev = c.k
		if c.gone {
			e.Uvarint(0)
			continue
		}
		name, _, _ := b.host(c.k)
		cur := l.Hosts[name]
		e.Uvarint(uint64(1 + c.drop))
		e.Uvarint(uint64(c.keep))
		if err := appendStarts(e, name, cur[:c.keep], cur[c.keep:]); err != nil {
			return err
		}
	}
	var added []string
	if found < len(l.Hosts) {
		for h := range l.Hosts {
			if !b.hasHost(h) {
				added = append(added, h)
			}
		}
		slices.Sort(added)
	}
	e.Uvarint(uint64(len(added)))
	for _, h := range added {
		e.String(h)
		if err := appendStarts(e, h, nil, l.Hosts[h]); err != nil {
			return err
		}
	}
	return nil
}

// common returns how cur differs from the base's starts lo to hi: it is
// keep of them after the first drop, then starts of its own.
func (b *ledgerBase) common(lo, hi int, cur []HostStart) (drop, keep int) {
	if len(cur) == 0 {
		return hi - lo, 0
	}
	drop = sort.Search(hi-lo, func(j int) bool { return b.start(lo+j) >= cur[0] })
	for lo+drop+keep < hi && keep < len(cur) && b.start(lo+drop+keep) == cur[keep] {
		keep++
	}
	return drop, keep
}

// hasHost reports whether the base has host h.
func (b *ledgerBase) hasHost(h string) bool {
	k := sort.Search(b.nh, func(k int) bool { name, _, _ := b.host(k); return name >= h })
	if k == b.nh {
		return false
	}
	name, _, _ := b.host(k)
	return name == h
}

// appendStarts encodes host's starts that follow kept.
func appendStarts(e *durable.Encoder, host string, kept, starts []HostStart) error {
	e.Uvarint(uint64(len(starts)))
	for i, s := range starts {
		prev := HostStart(0)
		switch {
		case i > 0:
			prev = starts[i-1]
		case len(kept) > 0:
			prev = kept[len(kept)-1]
		default:
			e.Varint(int64(s))
			continue
		}
		if s < prev {
			return fmt.Errorf("encode ledger: starts of host %q out of order", host)
		}
		e.Uvarint(uint64(s - prev))
	}
	return nil
}

// openDelta checks the delta file text, whose CRC-32C is sum, and reads
// which base it is of: ok when b, its base, then its Created and
// LastMinute and its records are next. A delta of a base older than b
// (or of any base when the ledger read has none of version 5, b nil) is
// one a write left as it stopped after writing a new base: the base holds
// it all, and it is passed over (not ok). A delta of any other base is
// ErrLedgerCorrupt.
func openDelta(text string, sum uint32, b *ledgerBase) (d *durable.Decoder, ok bool, err error) {
	d, err = durable.NewDecoder(text, sum, ledgerDeltaMagic, ErrLedgerCorrupt)
	if err != nil {
		return nil, false, err
	}
	seq, of := d.Uint64(), d.Uvarint()
	switch {
	case d.Err() != nil:
		return nil, false, d.Err()
	case b == nil || seq < b.seq:
		return nil, false, nil
	case seq != b.seq || of != uint64(b.sum()):
		return nil, false, fmt.Errorf("%w: a delta of another base (%d, not %d)", ErrLedgerCorrupt, seq, b.seq)
	}
	return d, true, nil
}

// readRecords reads the records of a delta of a base of n servers and
// calls set with each one's index and payload; a bad index fails d.
func readRecords(d *durable.Decoder, n int, set func(i int, p string)) {
	for i, k := -1, d.Count(1+payloadSize); k > 0 && d.Err() == nil; k-- {
		gap := d.Uvarint()
		if gap >= uint64(n-i-1) {
			d.Fail("record index")
			return
		}
		i += 1 + int(gap)
		if p := d.Raw(payloadSize); d.Err() == nil {
			set(i, p)
		}
	}
}

// deltaIndexes returns the indexes of the records the delta file at path
// holds, ascending, when it is one of the base b: nil when there is none,
// or it is of a base before b (a write stopped before removing it).
func deltaIndexes(path string, b *ledgerBase) ([]int, error) {
	text, sum, err := durable.ReadSummed(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var held []int
	_, err = deltaRecords(text, sum, b, func(i int, _ string) bool { held = append(held, i); return true })
	return held, err
}

// deltaRecords reads the records of the delta file text, whose CRC-32C is
// sum, of the base b (openDelta), and calls set with each one's index and
// payload; set returns false for a payload of an unknown reason code,
// which is damage. Not ok, set not called, for a delta of a base before b.
func deltaRecords(text string, sum uint32, b *ledgerBase, set func(i int, p string) bool) (ok bool, err error) {
	d, ok, err := openDelta(text, sum, b)
	if !ok || err != nil {
		return false, err
	}
	d.Varint() // Created and LastMinute: not a server's
	d.Varint()
	readRecords(d, b.n, func(i int, p string) {
		if !set(i, p) {
			d.Fail("reason")
		}
	})
	return true, d.Err()
}

// readStarts decodes starts that appendStarts encoded after kept.
func readStarts(d *durable.Decoder, kept []HostStart) []HostStart {
	n := d.Count(1)
	out := append(make([]HostStart, 0, len(kept)+n), kept...)
	for range n {
		if len(out) == 0 {
			out = append(out, HostStart(d.Varint()))
		} else {
			out = append(out, out[len(out)-1]+HostStart(d.Uvarint()))
		}
	}
	return out
}

// applyDelta applies the delta file text, whose CRC-32C is sum, to l,
// just decoded from its base, as openDelta reads it.
func (l *Ledger) applyDelta(text string, sum uint32) error {
	b := l.base
	d, ok, err := openDelta(text, sum, b)
	if !ok || err != nil {
		return err
	}
	l.Created, l.LastMinute = d.Varint(), d.Varint()
	readRecords(d, len(l.Servers), func(i int, p string) {
		if !decodePayload(&l.Servers[i], p) {
			d.Fail("reason")
		}
	})
	for k, n := -1, d.Count(2); n > 0 && d.Err() == nil; n-- {
		gap := d.Uvarint()
		if gap >= uint64(b.nh-k-1) {
			d.Fail("host index")
			break
		}
		k += 1 + int(gap)
		name, _, _ := b.host(k)
		cur, ok := l.Hosts[name]
		op := d.Uvarint()
		if op == 0 {
			delete(l.Hosts, name)
			continue
		}
		drop, keep := op-1, d.Uvarint()
		if !ok || drop > uint64(len(cur)) || keep > uint64(len(cur))-drop {
			d.Fail("host starts")
			break
		}
		l.Hosts[name] = readStarts(d, cur[drop:drop+keep])
	}
	prev := ""
	for j, n := 0, d.Count(2); j < n && d.Err() == nil; j++ {
		h := d.String()
		if _, dup := l.Hosts[h]; dup || j > 0 && h <= prev {
			d.Fail("new host")
			break
		}
		l.Hosts[h], prev = readStarts(d, nil), h
	}
	return d.Close()
}
