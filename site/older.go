package site

import (
	"encoding/json"
	"errors"
	"hash/crc32"
	"path/filepath"
	"slices"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
	"plug.directory/prober/site/record"
)

// A server's checks of the last 30 days beyond its published history (a
// server checked hourly has some 670 of them) are kept in
// DATA/site/older/<id>.bin, read and written again each time the server
// is rendered. They were JSON (older/<id>.json) before: some 100 bytes a
// check, and decoding and encoding them was most of a publish's work
// for a server with a month of checks. Now they are olderMagic, the
// number of checks, then each check as the gap after the one before
// (its start, Unix ms, as a varint: the first's is the gap after 0), its
// status (its index in data.Outcomes), its detail, a byte saying which
// of its latency, its phases and each of the four phases it has, and
// those numbers as varints; last the CRC-32C. A file of the layout before (olderJSONPath) is read when
// there is no .bin, and removed once the .bin is durable.
const olderMagic = "plug.directory site older checks v1\n"

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

// errOlderCorrupt is the error of an older-checks file that is not whole.
var errOlderCorrupt = errors.New("corrupt older checks")

// olderPath is where the checks of a server older than its published
// history, but within the uptime windows, are kept.
func olderPath(dataDir, id string) string {
	return filepath.Join(dataDir, "site", "older", filepath.FromSlash(id)+".bin")
}

// olderJSONPath is where a build before the binary layout kept them.
func olderJSONPath(dataDir, id string) string {
	return filepath.Join(dataDir, "site", "older", filepath.FromSlash(id)+".json")
}

// encodeOlder returns the older-checks file of cs, in ascending order of
// start.
func encodeOlder(cs []record.PastCheck) []byte {
	e := durable.NewEncoder(olderMagic, 8+len(cs)*12)
	e.Uvarint(uint64(len(cs)))
	var last int64
	for i := range cs {
		c := &cs[i]
		e.Varint(c.At - last)
		last = c.At
		e.Byte(byte(max(slices.Index(data.Outcomes, c.Status), 0))) // a status not listed is stored as the first
		e.String(c.Detail)
		var flags byte
		var nums [5]int64
		n := 0
		add := func(bit byte, v *int64) {
			if v != nil {
				flags |= bit
				nums[n] = *v
				n++
			}
		}
		add(olderLatency, c.LatencyMS)
		if p := c.Phases; p != nil {
			flags |= olderPhases
			add(olderDNS, p.DNSMS)
			add(olderConnect, p.ConnectMS)
			add(olderTLS, p.TLSMS)
			add(olderWait, p.WaitMS)
		}
		e.Byte(flags)
		for _, v := range nums[:n] {
			e.Varint(v)
		}
	}
	return e.Finish()
}

// decodeOlder reads an older-checks file, of either layout: encodeOlder's,
// or the JSON list of the layout before. Errors say what is wrong, not
// where: the caller names the file.
func decodeOlder(b []byte) ([]record.PastCheck, error) {
	if len(b) > 0 && b[0] == '[' {
		var cs []record.PastCheck
		if err := json.Unmarshal(b, &cs); err != nil {
			return nil, err
		}
		return cs, nil
	}
	d, err := durable.NewDecoder(string(b), crc32.Checksum(b, durable.Castagnoli), olderMagic, errOlderCorrupt)
	if err != nil {
		return nil, err
	}
	n := d.Count(4) // a gap, a status, an empty detail and the flags at least
	cs := make([]record.PastCheck, n)
	// Each check's numbers and phases point into two blocks, not an
	// allocation each: six a check, where a server has some 670.
	nums, phases := make([]int64, 0, 5*n), make([]record.Phases, 0, n)
	var last int64
	for i := range cs {
		c := &cs[i]
		last += d.Varint()
		c.At = last
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
			nums = append(nums, d.Varint())
			return &nums[len(nums)-1]
		}
		c.LatencyMS = num(olderLatency)
		if flags&olderPhases != 0 {
			phases = append(phases, record.Phases{DNSMS: num(olderDNS), ConnectMS: num(olderConnect), TLSMS: num(olderTLS), WaitMS: num(olderWait)})
			c.Phases = &phases[len(phases)-1]
		}
		if d.Err() != nil {
			break
		}
	}
	if err := d.Close(); err != nil {
		return nil, err
	}
	return cs, nil
}
