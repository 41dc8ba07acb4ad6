package spool

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"

	"plug.directory/prober/internal/durable"
)

// The ledger's base (version 5) holds the whole ledger in fixed-width
// records, so that it decodes on every core and a plan finds the records
// it changed by comparing bytes (ledgerdelta.go):
//
//	magic     "PDLEDGER\x05"
//	header    seq, Created, LastMinute (8 bytes each); the counts of
//	          servers, hosts, starts and string bytes (4 each)
//	servers   a record each, in order: the end of its id in the strings
//	          (4), then its payload (payloadSize)
//	hosts     in the order of their names: the end of the name in the
//	          strings and of its starts (4 + 4)
//	starts    8 bytes each, each host's ascending
//	strings   the servers' ids, then the hosts' names
//	CRC-32C   of everything before it
//
// Numbers are little-endian. A payload is the rank (4), the URL hash (8),
// six times (5 bytes each, signed unix seconds: any year a clock gives),
// the cadence (4) and the reasons (1). seq numbers the bases of a data
// directory, so a delta names the one it applies to.
const (
	ledgerMagicV5 = "PDLEDGER\x05"
	baseHeader    = len(ledgerMagicV5) + 3*8 + 4*4
	payloadSize   = 4 + 8 + 6*5 + 4 + 1
	recordSize    = 4 + payloadSize
	hostSize      = 8
	startSize     = 8
	timeLimit     = 1 << 39 // times are in [-timeLimit, timeLimit)
)

// ledgerBase is a base file as read or written, kept with the ledger it
// holds so that the next write compares the records with it.
type ledgerBase struct {
	text                string // the whole file, its checksum included
	seq                 uint64
	n, nh, ns, nstr     int // servers, hosts, starts, string bytes
	hosts, starts, strs int // offsets of the sections in text
}

func le32(s string, o int) uint32 {
	return uint32(s[o]) | uint32(s[o+1])<<8 | uint32(s[o+2])<<16 | uint32(s[o+3])<<24
}

func le64(s string, o int) uint64 { return uint64(le32(s, o)) | uint64(le32(s, o+4))<<32 }

// le40 reads a signed 5-byte number.
func le40(s string, o int) int64 {
	return int64(uint64(le32(s, o))<<24|uint64(s[o+4])<<56) >> 24
}

// put40 writes t in 5 bytes, as le40 reads it.
func put40(p []byte, t int64) {
	binary.LittleEndian.PutUint32(p, uint32(t))
	p[4] = byte(t >> 32)
}

// parseBase reads the layout of a base file whose checksum matched.
func parseBase(text string) (*ledgerBase, error) {
	if len(text) < baseHeader+4 || text[:len(ledgerMagicV5)] != ledgerMagicV5 {
		return nil, fmt.Errorf("%w: not a %q file", ErrLedgerCorrupt, ledgerMagicV5)
	}
	o := len(ledgerMagicV5) + 3*8
	b := &ledgerBase{text: text, seq: le64(text, len(ledgerMagicV5)),
		n: int(le32(text, o)), nh: int(le32(text, o+4)), ns: int(le32(text, o+8)), nstr: int(le32(text, o+12))}
	b.hosts = baseHeader + b.n*recordSize
	b.starts = b.hosts + b.nh*hostSize
	b.strs = b.starts + b.ns*startSize
	if b.strs+b.nstr+4 != len(text) {
		return nil, fmt.Errorf("%w: sections of %d bytes in a file of %d", ErrLedgerCorrupt, b.strs+b.nstr+4, len(text))
	}
	return b, nil
}

// sum returns the base's checksum, which a delta names.
func (b *ledgerBase) sum() uint32 { return le32(b.text, len(b.text)-4) }

// payload returns the payload of server i's record.
func (b *ledgerBase) payload(i int) string {
	o := baseHeader + i*recordSize + 4
	return b.text[o : o+payloadSize]
}

// idEnd returns where server i's id ends in the strings; 0 before the first.
func (b *ledgerBase) idEnd(i int) int {
	if i < 0 {
		return 0
	}
	return int(le32(b.text, baseHeader+i*recordSize))
}

// id returns server i's id, of a base that decoded.
func (b *ledgerBase) id(i int) string { return b.text[b.strs+b.idEnd(i-1) : b.strs+b.idEnd(i)] }

// host returns host k's name and the range of its starts, of a base that
// decoded.
func (b *ledgerBase) host(k int) (name string, lo, hi int) {
	from, lo := b.idEnd(b.n-1), 0
	if k > 0 {
		from, lo = int(le32(b.text, b.hosts+(k-1)*hostSize)), int(le32(b.text, b.hosts+(k-1)*hostSize+4))
	}
	o := b.hosts + k*hostSize
	return b.text[b.strs+from : b.strs+int(le32(b.text, o))], lo, int(le32(b.text, o+4))
}

// start returns start j of the starts.
func (b *ledgerBase) start(j int) HostStart { return HostStart(le64(b.text, b.starts+j*startSize)) }

// parts returns in how many runs n records are coded side by side. It
// follows GOMAXPROCS, which may change at any time (the runtime follows
// the container's CPU limit): a caller that sizes anything by the runs
// counts them once and gives inRuns that count.
func parts(n int) int { return max(1, min(runtime.GOMAXPROCS(0), n/(1<<16))) }

// inRuns calls f on each of runs runs of n records side by side and
// returns the first error.
func inRuns(n, runs int, f func(k, lo, hi int) error) error {
	errs := make([]error, runs)
	var wg sync.WaitGroup
	for k := range errs {
		wg.Go(func() { errs[k] = f(k, n*k/len(errs), n*(k+1)/len(errs)) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// decode fills l from the base, checking every offset and code.
func (b *ledgerBase) decode(l *Ledger) error {
	l.Created, l.LastMinute = int64(le64(b.text, len(ledgerMagicV5)+8)), int64(le64(b.text, len(ledgerMagicV5)+16))
	l.Servers = make([]LedgerServer, b.n)
	l.index = nil
	err := inRuns(b.n, parts(b.n), func(_, lo, hi int) error {
		return b.servers(lo, hi, b.payload, func(i int, s *LedgerServer) { l.Servers[i] = *s })
	})
	if err != nil {
		return err
	}
	ids := b.idEnd(b.n - 1)
	all := make([]HostStart, b.ns)
	for j := range all {
		all[j] = b.start(j)
	}
	l.Hosts = make(map[string][]HostStart, b.nh)
	from, lo, prev := ids, 0, ""
	for k := range b.nh {
		to, hi := int(le32(b.text, b.hosts+k*hostSize)), int(le32(b.text, b.hosts+k*hostSize+4))
		if to < from || to > b.nstr || hi < lo || hi > b.ns {
			return fmt.Errorf("%w: bad record of host %d", ErrLedgerCorrupt, k)
		}
		name, starts := b.text[b.strs+from:b.strs+to], all[lo:hi:hi]
		if k > 0 && name <= prev || !slices.IsSorted(starts) {
			return fmt.Errorf("%w: host %d out of order", ErrLedgerCorrupt, k)
		}
		l.Hosts[name] = starts
		from, lo, prev = to, hi, name
	}
	if from != b.nstr || lo != b.ns {
		return fmt.Errorf("%w: bytes after the last host", ErrLedgerCorrupt)
	}
	l.base = b
	return nil
}

// servers decodes the records of servers lo to hi, each with the payload
// payload gives, and calls f with each, checking every offset and code.
func (b *ledgerBase) servers(lo, hi int, payload func(i int) string, f func(i int, s *LedgerServer)) error {
	ids := b.idEnd(b.n - 1)
	if ids > b.nstr {
		return fmt.Errorf("%w: ids of %d bytes in %d", ErrLedgerCorrupt, ids, b.nstr)
	}
	var s LedgerServer
	for i, from := lo, b.idEnd(lo-1); i < hi; i++ {
		to := b.idEnd(i)
		if to < from || to > ids || !decodePayload(&s, payload(i)) {
			return fmt.Errorf("%w: bad record of server %d", ErrLedgerCorrupt, i)
		}
		s.ID, from = b.text[b.strs+from:b.strs+to], to
		f(i, &s)
	}
	return nil
}

// decodePayload reads a record's payload into s, reporting whether its
// reason codes are known.
func decodePayload(s *LedgerServer, p string) bool {
	s.Rank, s.URLHash = int32(le32(p, 0)), le64(p, 4)
	s.FirstSeen, s.Planned, s.PrevPlanned = le40(p, 12), le40(p, 17), le40(p, 22)
	s.NextDue, s.Resume, s.Seen = le40(p, 27), le40(p, 32), le40(p, 37)
	s.Cadence = int32(le32(p, 42))
	s.Reason, s.PrevReason = ReasonCode(p[46]&15), ReasonCode(p[46]>>4)
	return s.Reason <= CodeRoutine && s.PrevReason <= CodeRoutine
}

// putPayload writes s's payload into p.
func putPayload(p []byte, s *LedgerServer) error {
	if s.Reason > CodeRoutine || s.PrevReason > CodeRoutine {
		return fmt.Errorf("encode ledger: server %q: bad reason code", s.ID)
	}
	if min(s.FirstSeen, s.Planned, s.PrevPlanned, s.NextDue, s.Resume, s.Seen) < -timeLimit ||
		max(s.FirstSeen, s.Planned, s.PrevPlanned, s.NextDue, s.Resume, s.Seen) >= timeLimit {
		return fmt.Errorf("encode ledger: server %q: a time out of range", s.ID)
	}
	_ = p[payloadSize-1]
	binary.LittleEndian.PutUint32(p, uint32(s.Rank))
	binary.LittleEndian.PutUint64(p[4:], s.URLHash)
	put40(p[12:], s.FirstSeen)
	put40(p[17:], s.Planned)
	put40(p[22:], s.PrevPlanned)
	put40(p[27:], s.NextDue)
	put40(p[32:], s.Resume)
	put40(p[37:], s.Seen)
	binary.LittleEndian.PutUint32(p[42:], uint32(s.Cadence))
	p[46] = byte(s.Reason) | byte(s.PrevReason)<<4
	return nil
}

// encodeBase encodes l as the base numbered seq, its records on every
// core, its hosts in the order of their names.
func (l *Ledger) encodeBase(seq uint64) ([]byte, error) {
	names := slices.Sorted(maps.Keys(l.Hosts))
	n, ns, nstr := len(l.Servers), 0, 0
	idFrom := make([]int, parts(n)+1) // where each run's ids start
	for k := range len(idFrom) - 1 {
		for _, s := range l.Servers[n*k/(len(idFrom)-1) : n*(k+1)/(len(idFrom)-1)] {
			idFrom[k+1] += len(s.ID)
		}
		idFrom[k+1] += idFrom[k]
	}
	for _, h := range names {
		ns, nstr = ns+len(l.Hosts[h]), nstr+len(h)
	}
	nstr += idFrom[len(idFrom)-1]
	if max(n, len(names), ns, nstr) > math.MaxUint32/recordSize { // offsets of 4 bytes
		return nil, fmt.Errorf("encode ledger: %d servers, %d hosts, %d starts, %d bytes of names: too large", n, len(names), ns, nstr)
	}
	hosts := baseHeader + n*recordSize
	starts := hosts + len(names)*hostSize
	strs := starts + ns*startSize
	b := make([]byte, strs+nstr, strs+nstr+4)
	h := b[copy(b, ledgerMagicV5):]
	for k, v := range [...]uint64{seq, uint64(l.Created), uint64(l.LastMinute)} {
		binary.LittleEndian.PutUint64(h[8*k:], v)
	}
	for k, v := range [...]int{n, len(names), ns, nstr} {
		binary.LittleEndian.PutUint32(h[24+4*k:], uint32(v))
	}
	err := inRuns(n, len(idFrom)-1, func(k, lo, hi int) error {
		end := idFrom[k]
		for i := lo; i < hi; i++ {
			s, r := &l.Servers[i], b[baseHeader+i*recordSize:]
			end += copy(b[strs+end:], s.ID)
			binary.LittleEndian.PutUint32(r, uint32(end))
			if err := putPayload(r[4:], s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	end, j := idFrom[len(idFrom)-1], 0
	for k, name := range names {
		if !slices.IsSorted(l.Hosts[name]) {
			return nil, fmt.Errorf("encode ledger: starts of host %q out of order", name)
		}
		for _, s := range l.Hosts[name] {
			binary.LittleEndian.PutUint64(b[starts+j*startSize:], uint64(s))
			j++
		}
		end += copy(b[strs+end:], name)
		binary.LittleEndian.PutUint32(b[hosts+k*hostSize:], uint32(end))
		binary.LittleEndian.PutUint32(b[hosts+k*hostSize+4:], uint32(j))
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, durable.Castagnoli)), nil
}

// MarshalBinary encodes the ledger as one base file.
func (l *Ledger) MarshalBinary() ([]byte, error) { return l.encodeBase(0) }

// UnmarshalBinary decodes a ledger file of any version, a base without its
// delta. Any damage is ErrLedgerCorrupt.
func (l *Ledger) UnmarshalBinary(b []byte) error {
	return l.decodeFile(string(b), crc32.Checksum(b, durable.Castagnoli))
}

// decodeFile decodes the text of a ledger file of any version, whose
// CRC-32C (its checksum included) is sum.
func (l *Ledger) decodeFile(text string, sum uint32) error {
	if !isBase(text) {
		return l.unmarshalV4(text, sum)
	}
	b, err := checkBase(text, sum)
	if err != nil {
		return err
	}
	return b.decode(l)
}

// isBase reports whether text is of a base of version 5.
func isBase(text string) bool { return strings.HasPrefix(text, ledgerMagicV5) }

// checkBase checks the CRC-32C sum of a base's text and reads its layout.
func checkBase(text string, sum uint32) (*ledgerBase, error) {
	if sum != durable.CRCResidue {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrLedgerCorrupt)
	}
	return parseBase(text)
}
