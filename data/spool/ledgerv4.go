package spool

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"

	"plug.directory/prober/internal/durable"
)

// The ledger's format before version 5 (durable's codec): the magic,
// Created and LastMinute, the hosts with their starts as deltas, then the
// servers with their times relative to LastMinute, and the CRC-32C. Version 3 was the same with a
// CRC-32 (IEEE): both are read, and written again as version 5.
const (
	ledgerMagicV4 = "PDLEDGER\x04"
	ledgerMagicV3 = "PDLEDGER\x03"
)

// ledgerResidueV3 is the CRC-32 (IEEE) of an intact version 3 ledger.
var ledgerResidueV3 = crc32.ChecksumIEEE(binary.LittleEndian.AppendUint32(nil, crc32.ChecksumIEEE(nil)))

// unmarshalV4 decodes a ledger of version 4 or 3, whose CRC-32C (its
// checksum included) is sum.
func (l *Ledger) unmarshalV4(text string, sum uint32) error {
	magic := ledgerMagicV4
	if strings.HasPrefix(text, ledgerMagicV3) {
		// Summed by another polynomial: checked here, once.
		if crc32.ChecksumIEEE([]byte(text)) != ledgerResidueV3 {
			return fmt.Errorf("%w: checksum mismatch", ErrLedgerCorrupt)
		}
		magic, sum = ledgerMagicV3, durable.CRCResidue
	}
	d, err := durable.NewDecoder(text, sum, magic, ErrLedgerCorrupt)
	if err != nil {
		return err
	}
	l.Created = d.Varint()
	l.LastMinute = d.Varint()
	nh := d.Count(2)
	l.Hosts = make(map[string][]HostStart, nh)
	for range nh {
		h := d.String()
		starts := make([]HostStart, d.Count(1))
		prev := HostStart(0)
		for i := range starts {
			prev += HostStart(d.Uvarint())
			starts[i] = prev
		}
		l.Hosts[h] = starts
	}
	l.Servers = make([]LedgerServer, d.Count(17))
	l.index = nil
	base := l.LastMinute
	for i := range l.Servers {
		s := &l.Servers[i]
		s.ID = d.String()
		s.Rank = int32(d.Uvarint())
		s.URLHash = d.Uint64()
		s.FirstSeen = d.Varint() + base
		s.Planned = d.Varint() + base
		s.PrevPlanned = d.Varint() + base
		s.NextDue = d.Varint() + base
		s.Resume = d.Varint() + base
		s.Seen = d.Varint() + base
		rc := d.Byte()
		s.Reason, s.PrevReason = ReasonCode(rc&15), ReasonCode(rc>>4)
		if s.Reason > CodeRoutine || s.PrevReason > CodeRoutine {
			d.Fail("reason")
			break
		}
		s.Cadence = int32(d.Uvarint())
	}
	return d.Close()
}
