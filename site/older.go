package site

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math/bits"
	"path/filepath"
	"slices"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
	"plug.directory/prober/site/record"
)

// A server with more checks in the last 30 days than its published history
// holds (48; a server checked hourly has some 720) keeps them all, the
// history's too, in DATA/site/older/<id>.bin, its "older checks": a check
// is there before it leaves the history, so a crash that keeps the change
// of one of the two files and not the other's loses none. They were the
// checks beyond the history only, as JSON (older/<id>.json), some 100 bytes
// a check, read, decoded, encoded and written whole each time the server
// was rendered: for a server with a month of checks, most of a publish's
// work and bytes. Now they are a log of what changed: olderMagic,
// then records, each its payload's length (four bytes, little-endian) and
// the CRC-32C of those four bytes, the payload, and the payload's CRC-32C.
// A payload is a cut (a start, Unix ms, as a varint: the checks before it
// go; 0 cuts none), the number of checks appended, and each check as the
// gap after the one before (its start; the first's is the gap after 0),
// its status (its index in data.Outcomes), its detail, a byte saying which
// of its latency, its phases and each of the four phases it has, and those
// numbers as varints: some 14 bytes a check. A render that adds a check and
// lets one age out appends one record of some 30 bytes; one whose checks
// are not the last ones and some more (a new address, a rebuild), or whose
// file would grow past a quarter more than what it holds written anew
// (olderSlack), writes the file anew, one record.
//
// A record cut short (fewer bytes than its header or than its length says)
// is one a killed publish was appending: read as never written, and written
// over by the next append. A whole record whose checksum fails, or whose
// checks do not follow the ones before, is damage. A file of the layout
// before (olderJSONPath) is read when there is no .bin, and removed once the
// .bin is durable.
const olderMagic = "plug.directory site older checks log v1\n"

// olderSlack is, in quarters, the most an older-checks file weighs
// against what it holds written anew: past it, it is written anew. Each
// render reads every record: a month of hourly checks written anew is
// some 8 KB, and a render appends some 32 bytes, so that five quarters
// make a render read 32 records on average, where twice (the slack
// before 2026-12-07) made it read 128, a fifth of the CPU of a render of
// such a server; the file is written anew every 64 renders where it was
// every 255, some 100 bytes a render more (a minute at 25,000 servers
// wrote 0.5 % more).
const olderSlack = 5

// Bits of a check's flags byte: which of its optional numbers follow.
const (
	olderLatency = 1 << iota
	olderPhases  // it has phases, though none may be measured
	olderDNS
	olderConnect
	olderTLS
	olderWait
	olderFlags = olderWait<<1 - 1 // every bit that may be set
)

// errOlderCorrupt is the error of an older-checks file that is damaged.
var errOlderCorrupt = errors.New("corrupt older checks")

// olderPath is where a server's checks within the uptime windows are kept
// once they are more than its published history holds.
func olderPath(dataDir, id string) string {
	return filepath.Join(dataDir, "site", "older", filepath.FromSlash(id)+".bin")
}

// olderJSONPath is where a build before the binary layout kept them.
func olderJSONPath(dataDir, id string) string {
	return filepath.Join(dataDir, "site", "older", filepath.FromSlash(id)+".json")
}

// olderLog is an older-checks file as read.
type olderLog struct {
	checks []record.PastCheck // ascending by start, what its records leave
	end    int64              // bytes up to its last whole record, where the next is appended; -1 when it cannot be appended to (JSON)
}

// upTo drops the checks after last, the start of the last check of the
// server's published file: checks of a publish whose published file did
// not take their place (its flush failed, or it was killed before), whose
// results are read again, as the site's record did not move either. Kept,
// they would be found there already and the file's state not brought up
// to them (record.Summary.Apply). The file is then written anew, not
// appended to after them.
func (o *olderLog) upTo(last time.Time) {
	n := len(o.checks)
	for n > 0 && o.checks[n-1].At > last.UnixMilli() {
		n--
	}
	if n < len(o.checks) {
		o.checks, o.end = o.checks[:n], -1
	}
}

// olderRecord appends to e one record: the checks before cut go, cs are
// appended.
func olderRecord(e *durable.Encoder, cut int64, cs []record.PastCheck) {
	p := durable.NewEncoder("", 4+len(cs)*14)
	p.Varint(cut)
	p.Uvarint(uint64(len(cs)))
	var last int64
	for i := range cs {
		c := &cs[i]
		p.Varint(c.At - last)
		last = c.At
		p.Byte(byte(max(slices.Index(data.Outcomes, c.Status), 0))) // a status not listed is stored as the first
		p.String(c.Detail)
		nums := olderNums(c)
		var flags byte
		if c.Phases != nil {
			flags |= olderPhases
		}
		for k, v := range nums {
			if v != nil {
				flags |= olderNumBits[k]
			}
		}
		p.Byte(flags)
		for _, v := range nums {
			if v != nil {
				p.Varint(*v)
			}
		}
	}
	olderFrame(e, p.Bytes())
}

// olderNums returns the optional numbers of a check a record holds, in
// the order it holds them, each flagged by the bit of olderNumBits at its
// place; nil for one it has not.
func olderNums(c *record.PastCheck) [5]*int64 {
	if ph := c.Phases; ph != nil {
		return [5]*int64{c.LatencyMS, ph.DNSMS, ph.ConnectMS, ph.TLSMS, ph.WaitMS}
	}
	return [5]*int64{c.LatencyMS}
}

// olderNumBits are the flags of the numbers of olderNums, in its order.
var olderNumBits = [5]byte{olderLatency, olderDNS, olderConnect, olderTLS, olderWait}

// olderFrame appends to e the record of payload: its length, the length's
// checksum, the payload and its checksum.
func olderFrame(e *durable.Encoder, payload []byte) {
	var h [durable.RecordHead]byte
	e.Raw(durable.AppendRecordHead(h[:0], len(payload)))
	e.Raw(payload)
	e.Uint32(crc32.Checksum(payload, durable.Castagnoli))
}

// encodeOlder returns the older-checks file of cs, written anew.
func encodeOlder(cs []record.PastCheck) []byte {
	e := durable.NewEncoder(olderMagic, len(olderMagic)+16+len(cs)*14)
	olderRecord(e, 0, cs)
	return e.Bytes()
}

// olderChange returns what brings the file read as old to hold cs: nil
// when it holds them already, a record to append at old.end, or, when
// whole, the file written anew.
func olderChange(old olderLog, cs []record.PastCheck) (b []byte, whole bool) {
	if slices.EqualFunc(old.checks, cs, samePastCheck) {
		return nil, false
	}
	if old.end < 0 || len(cs) == 0 {
		return encodeOlder(cs), true
	}
	k, _ := slices.BinarySearchFunc(old.checks, cs[0].At, func(c record.PastCheck, at int64) int { return cmp.Compare(c.At, at) })
	kept := old.checks[k:]
	if len(kept) > len(cs) || !slices.EqualFunc(kept, cs[:len(kept)], samePastCheck) {
		return encodeOlder(cs), true
	}
	var cut int64
	if k > 0 {
		cut = cs[0].At
	}
	e := durable.NewEncoder("", 32)
	olderRecord(e, cut, cs[len(kept):])
	if old.end+int64(e.Len()) > int64(olderLen(cs))*olderSlack/4 { // written anew
		return encodeOlder(cs), true
	}
	return e.Bytes(), false
}

// olderLen returns len(encodeOlder(cs)), counted rather than written:
// what olderChange weighs a file against at each render, where it was
// 3 % of a minute at a month of checks a server to write it.
func olderLen(cs []record.PastCheck) int {
	n := varintLen(0) + uvarintLen(uint64(len(cs)))
	var last int64
	for i := range cs {
		c := &cs[i]
		n += varintLen(c.At-last) + 1 + uvarintLen(uint64(len(c.Detail))) + len(c.Detail) + 1
		last = c.At
		for _, v := range olderNums(c) {
			if v != nil {
				n += varintLen(*v)
			}
		}
	}
	return len(olderMagic) + durable.RecordHead + n + 4
}

// uvarintLen and varintLen return the bytes durable.Encoder's Uvarint and
// Varint write v in.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }
func varintLen(v int64) int   { return uvarintLen(uint64(v<<1) ^ uint64(v>>63)) }

// samePastCheck reports whether a and b say the same of one check.
func samePastCheck(a, b record.PastCheck) bool {
	samePtr := func(x, y *int64) bool { return x == nil && y == nil || x != nil && y != nil && *x == *y }
	if a.At != b.At || a.Status != b.Status || a.Detail != b.Detail || !samePtr(a.LatencyMS, b.LatencyMS) || (a.Phases == nil) != (b.Phases == nil) {
		return false
	}
	if a.Phases == nil {
		return true
	}
	p, q := a.Phases, b.Phases
	return samePtr(p.DNSMS, q.DNSMS) && samePtr(p.ConnectMS, q.ConnectMS) && samePtr(p.TLSMS, q.TLSMS) && samePtr(p.WaitMS, q.WaitMS)
}

// readOlder reads an older-checks file, of either layout: the log, or the
// JSON list of the layout before. Errors say what is wrong, not where: the
// caller names the file.
func readOlder(b []byte) (olderLog, error) {
	if len(b) > 0 && b[0] == '[' {
		var cs []record.PastCheck
		if err := json.Unmarshal(b, &cs); err != nil {
			return olderLog{}, err
		}
		return olderLog{checks: cs, end: -1}, nil
	}
	if len(b) < len(olderMagic) || string(b[:len(olderMagic)]) != olderMagic {
		return olderLog{}, fmt.Errorf("%w: not a %q file", errOlderCorrupt, olderMagic)
	}
	// The file is copied once, for the checks' reasons to be cut from.
	text := string(b)
	// A record is its payload and the payload's checksum, which its length
	// leaves out. The records' counts are read first, so that the checks,
	// their numbers and phases are made once: as they came, a month of
	// checks grew some three times, and its numbers went in a block each
	// few dozen records.
	// A damaged length stops the count: the read after it reports the
	// first damage of the file, that length or a record before it.
	total := 0
	_, _ = durable.EachRecord(b, len(olderMagic), 4, errOlderCorrupt, func(_ int, rec []byte) error {
		total += olderCount(rec)
		return nil
	})
	r := olderReader{checks: make([]record.PastCheck, 0, total), nums: make([]int64, 0, 5*total), phases: make([]record.Phases, 0, total)}
	end, err := durable.EachRecord(b, len(olderMagic), 4, errOlderCorrupt, func(off int, rec []byte) error {
		start := off + durable.RecordHead
		d, err := durable.NewDecoder(text[start:start+len(rec)], crc32.Checksum(rec, durable.Castagnoli), "", errOlderCorrupt)
		if err == nil {
			err = r.apply(d)
		}
		if err != nil {
			return fmt.Errorf("the record at byte %d: %w", off, err)
		}
		return nil
	})
	if err != nil {
		return olderLog{}, err
	}
	return olderLog{checks: r.checks, end: int64(end)}, nil
}

// olderCount returns how many checks the record rec says it holds, at
// most one each four of its bytes (as apply reads it: the least a check
// takes), 0 when it cannot say: apply, which checks the record's
// checksum, finds what is wrong.
func olderCount(rec []byte) int {
	_, k := binary.Varint(rec)
	if k <= 0 {
		return 0
	}
	n, m := binary.Uvarint(rec[k:])
	if m <= 0 {
		return 0
	}
	return int(min(n, uint64(len(rec)/4)))
}

// olderReader holds the checks of the records of an older-checks file
// read so far.
type olderReader struct {
	checks []record.PastCheck
	// nums and phases are the blocks the checks' numbers and phases point
	// into, not an allocation each. They, and checks, are made for every
	// check the records hold (olderCount), which apply never reads past
	// (d.Count): appending never moves them. (Were one moved, a check's
	// pointers would still hold its numbers, in the block before.)
	nums   []int64
	phases []record.Phases
}

// apply applies one record, read by d: its cut, then its checks, which
// must come after those kept. The checks cut are left behind, not moved
// over: a file holds some 500 records, each of which cuts the oldest
// check of a month of them.
func (r *olderReader) apply(d *durable.Decoder) error {
	cut := d.Varint()
	n := d.Count(4) // a gap, a status, an empty detail and the flags at least
	if d.Err() != nil {
		return d.Err()
	}
	k, _ := slices.BinarySearchFunc(r.checks, cut, func(c record.PastCheck, at int64) int { return cmp.Compare(c.At, at) })
	r.checks = r.checks[k:]
	var last int64
	for range n {
		var c record.PastCheck
		last += d.Varint()
		c.At = last
		if k := len(r.checks); k > 0 && c.At <= r.checks[k-1].At {
			d.Fail("order of checks")
			break
		}
		st := d.Byte()
		if int(st) >= len(data.Outcomes) {
			d.Fail("status")
			break
		}
		c.Status = data.Outcomes[st]
		c.Detail = d.String()
		flags := d.Byte()
		if flags&^olderFlags != 0 || flags&olderPhases == 0 && flags&^olderLatency != 0 { // a phase without phases
			d.Fail("flags")
			break
		}
		num := func(bit byte) *int64 {
			if flags&bit == 0 {
				return nil
			}
			r.nums = append(r.nums, d.Varint())
			return &r.nums[len(r.nums)-1]
		}
		c.LatencyMS = num(olderLatency)
		if flags&olderPhases != 0 {
			r.phases = append(r.phases, record.Phases{DNSMS: num(olderDNS), ConnectMS: num(olderConnect), TLSMS: num(olderTLS), WaitMS: num(olderWait)})
			c.Phases = &r.phases[len(r.phases)-1]
		}
		if d.Err() != nil {
			break
		}
		r.checks = append(r.checks, c)
	}
	return d.Close()
}
