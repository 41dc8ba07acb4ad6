package site

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/internal/durable"
	"plug.directory/prober/site/feed"
)

// storeMagic starts state.bin; a file without it is not ours, or of an
// older layout (v1 had no checksum), and the site is rebuilt: the store is
// derived from the data directory and the published files. A file of
// storeMagicV2, the layout before each row's facts, loads with
// them not read yet (row.Problems -1), and backfillFacts reads them over
// the next runs. A file of storeMagicV3, before the hashes of each row's
// files, loads with them unknown (0): a server's files are read back to
// compare the next time it is rendered. A file of storeMagicV4 has the
// record of index.json's parts in the JSON of its meta, where v5 has it
// in binary after the rank order (encodeParts). Up to v5 a row was its
// numbers as varints, read one after the other; v6 writes them at a fixed
// width (rowWidth), read at known places, a quarter of the CPU. v6 has one
// checksum, of the whole file, which every publish read through; v7 puts
// all but the rows' numbers in a head of its own checksum, and the
// numbers after it in blocks of their own (storebase.go), read where a
// publish needs them. A record of a layout before v7 is read and written
// anew as v7 by the next save.
const (
	storeMagic   = "plug.directory site state v7\n"
	storeMagicV6 = "plug.directory site state v6\n"
	storeMagicV5 = "plug.directory site state v5\n"
	storeMagicV4 = "plug.directory site state v4\n"
	storeMagicV3 = "plug.directory site state v3\n"
	storeMagicV2 = "plug.directory site state v2\n"
)

// row is what the site remembers of one server between runs: enough to
// write its index row and to know when its files must be rendered again
// without loading its summary. It holds no pointer: the collector would
// follow each of a million rows' at every cycle. Its id is where it is in
// its store's ids (store.id), its status and protocol version numbers.
type row struct {
	idAt, idLen uint32
	Rank        int
	URLSum      uint64 // FNV-64a of its address, to notice a new one
	status      uint8  // status shown, its index in data.Outcomes (Status)
	Paused      bool
	Speaks      bool  // it speaks 2026-07-28 (see Protocol below)
	Problems    int32 // its tool problems; -1 while its facts are not read yet
	LastCheck   int64 // start of the last check, Unix ms; 0 when never checked
	Uptime7d    int64 // hundredths of a percent; -1 when nothing counted
	Tools       int64 // tool count of the last check if it listed them; -1 when unknown
	PlanNext    int64 // next start a plan file names, Unix ms; 0 when none
	Expires     int64 // when its files change without new input, Unix ms; 0 never
	EffCad      int64 // cadence its host's caps stretch it to, seconds; 0 when not stretched

	// protocol, Speaks and Problems are its facts for index.json's
	// counts, as its file last published them: the protocol version
	// negotiated (its number: protocolNumber), whether it speaks
	// 2026-07-28, its number of tool problems. (Speaks and Problems sit
	// beside Paused, in its padding.)
	protocol uint32

	// HTMLSum and StripSum are the FNV-64a of its page and strip as
	// written (writer.putSum), so that a publish need not read them back
	// to know whether they change; 0 when unknown. Its JSON file is read
	// anyway, as its record (loadSummary); its badges and feed are written
	// when what they show changes.
	HTMLSum, StripSum uint64
}

// Protocol returns the protocol version the row's server last spoke, ""
// when none.
func (r *row) Protocol() string { return protocolName(r.protocol) }

// Status returns the status the row shows.
func (r *row) Status() data.Outcome { return data.Outcomes[r.status] }

// setStatus sets the status the row shows; one not listed in
// data.Outcomes is kept as the first, as a record keeps it.
func (r *row) setStatus(o data.Outcome) { r.status = statusIndex(o) }

// statusIndex returns the index of o in data.Outcomes, 0 when not listed.
func statusIndex(o data.Outcome) uint8 { return uint8(max(slices.Index(data.Outcomes, o), 0)) }

// pendingStatus is the status of a row not checked yet.
var pendingStatus = statusIndex(data.Pending)

// fileSig tells whether an input file changed since the last run.
type fileSig struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime_ns"`
}

func sigOf(path string) (fileSig, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileSig{Path: path}, err
	}
	return fileSig{Path: path, Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}, nil
}

// meta is what the site remembers of its inputs.
type meta struct {
	List     fileSig                `json:"list"`
	Paused   fileSig                `json:"paused"`
	Journals map[string]journalMark `json:"journals"`           // by journal name
	Parts    map[string]int64       `json:"parts"`              // Parquet part, relative to DATA -> size folded in
	Plans    map[string]fileSig     `json:"plans"`              // plan file, relative to DATA -> signature read
	ListBad  int                    `json:"list_bad,omitempty"` // bad rows of the ranked list as last read
	Sums     map[string]uint64      `json:"sums,omitempty"`     // file about every server, by base name -> FNV-64a as written (writer.putSum)
	Index    []indexPart            `json:"-"`                  // index.json's parts, in id order (writeIndex); in binary (encodeParts)
	// Ledger is the base of the planner's ledger last read whole, when
	// its records were in the order of Order, one a row: the next run
	// reads only its delta (readLedger). nil: read it whole.
	Ledger *spool.LedgerMark `json:"ledger,omitempty"`
}

// journalMark is how much of a journal was folded in.
type journalMark struct {
	Size int64 `json:"size"` // bytes when read
	Done int   `json:"done"` // results folded in
}

// store is the content of DATA/site/state.bin.
type store struct {
	Meta  meta
	rows  []row     // sorted by id; nil while the base's are read lazily (lazy: row, storerows.go)
	Order []uint32  // indexes of rows sorted by rank, ties by id; nil while the base's stands (orderAt)
	ids   string    // the text the rows' ids are cut from (id): the base's, or the ids end to end (setRows)
	lazy  *lazyRows // the base's rows not all decoded yet; nil when every row is

	// factsPending: rows whose facts are not read yet may be left (a
	// record of storeMagicV2), for backfillFacts.
	factsPending bool
	// base is what the record was read from (storedelta.go): state.bin's
	// checksum (of a v7 base its head's, the four bytes before the rows'
	// numbers; of one before, the file's last four; "" when there is
	// none), where it is and the file's size, its meta, its number of
	// rows, where they are and its order's bytes (of a v6 or v7 base: one
	// of a layout before v7, old, is written anew whole), and its index's
	// parts. A publish appends to the log of what changed since
	// (state-delta.bin) the rows, meta and parts that changed, or writes
	// a new base, or nothing when nothing changed.
	baseSum   string
	baseSumAt int64
	baseSize  int64
	baseMeta  string
	baseN     int
	baseRows  rowsText
	baseOrder string
	baseIndex []indexPart
	old       bool
	log       logRead
}

// rowsText is what is kept of the rows of a v6 or v7 base (rowsSection): the
// protocol versions they name, from 1, the text of their ids, where each
// ends and each one's version, and where their numbers are in the file.
type rowsText struct {
	versions             []string
	ids, ends, versionOf string
	numsAt               int64
}

func newStore() *store {
	return &store{Meta: meta{Journals: map[string]journalMark{}, Parts: map[string]int64{}, Plans: map[string]fileSig{}, Sums: map[string]uint64{}}}
}

// id returns the id of r, a decoded row of s (idOf: any row).
func (s *store) id(r *row) string { return s.ids[r.idAt : r.idAt+r.idLen] }

// setRows makes rows, sorted by id, the rows of s, rows[i] the row of
// ids[i], with their ids end to end in s.ids.
func (s *store) setRows(rows []row, ids []string) {
	n := 0
	for _, id := range ids {
		n += len(id)
	}
	var b strings.Builder
	b.Grow(n)
	for i, id := range ids {
		rows[i].idAt, rows[i].idLen = uint32(b.Len()), uint32(len(id))
		b.WriteString(id)
	}
	s.close()
	s.rows, s.ids, s.lazy = rows, b.String(), nil
}

// find returns the index of the row of id, or -1.
func (s *store) find(id string) int {
	i, ok := sort.Find(s.n(), func(i int) int { return strings.Compare(id, s.idOf(i)) })
	if !ok {
		return -1
	}
	return i
}

// sortOrder recomputes Order from the rows, every one decoded.
func (s *store) sortOrder() {
	s.Order = make([]uint32, s.n())
	for i := range s.Order {
		s.Order[i] = uint32(i)
	}
	slices.SortFunc(s.Order, func(a, b uint32) int {
		if d := s.rows[a].Rank - s.rows[b].Rank; d != 0 {
			return d
		}
		return strings.Compare(s.id(&s.rows[a]), s.id(&s.rows[b]))
	})
}

// encoded is the site's record encoded, in the parts a delta compares
// with its base: the JSON of meta, the number of rows, the rows (the
// columns of their protocol versions' table, ids and facts, when their
// files expire, and their numbers: rowsSection), the rank order, the
// record of the index's parts.
type encoded struct {
	meta    []byte
	n       int
	rows    []byte
	expires []byte
	nums    []byte
	order   []byte
	parts   []byte
}

// encode encodes the store's parts (file assembles them), every row
// decoded.
func (s *store) encode() (encoded, error) {
	if err := s.loadAll(); err != nil {
		return encoded{}, err
	}
	mb, err := json.Marshal(s.Meta)
	if err != nil {
		return encoded{}, fmt.Errorf("encode site state: %w", err)
	}
	rows, expires, nums := s.rowsSection()
	return encoded{meta: mb, n: s.n(), rows: rows, expires: expires, nums: nums, order: s.orderSection(), parts: encodeParts(s.Meta.Index)}, nil
}

// rowsSection returns the rows of state.bin: in its head, the protocol
// versions they name (their number, then each one, a row naming the first
// as 1, none as 0), their ids end to end, then for each row where its id
// ends in them (four bytes), then each one's version (four bytes), its
// facts (a byte: factsByte); apart, for the head's end, when each one's
// files expire (eight bytes: Expires); and after the head each one's
// numbers, rowWidth bytes (appendFixed).
func (s *store) rowsSection() (head, expires, nums []byte) {
	var names []string
	index := map[uint32]uint32{0: 0}
	idBytes := 0
	for i := range s.rows {
		r := &s.rows[i]
		if _, ok := index[r.protocol]; !ok {
			names = append(names, r.Protocol())
			index[r.protocol] = uint32(len(names))
		}
		idBytes += int(r.idLen)
	}
	n := s.n()
	e := durable.NewEncoder("", 16+len(names)*12+idBytes+n*headWidth)
	e.Uvarint(uint64(len(names)))
	for _, v := range names {
		e.String(v)
	}
	e.Uvarint(uint64(idBytes))
	for i := range s.rows {
		e.Raw([]byte(s.id(&s.rows[i])))
	}
	b, end := e.Bytes(), uint32(0)
	for i := range s.rows {
		end += s.rows[i].idLen
		b = binary.LittleEndian.AppendUint32(b, end)
	}
	for i := range s.rows {
		b = binary.LittleEndian.AppendUint32(b, index[s.rows[i].protocol])
	}
	for i := range s.rows {
		r := &s.rows[i]
		b = append(b, factsByte(r.status, r.Paused, r.Speaks, r.Problems))
	}
	expires = make([]byte, 0, 8*n)
	for i := range s.rows {
		expires = binary.LittleEndian.AppendUint64(expires, uint64(s.rows[i].Expires))
	}
	nums = make([]byte, 0, n*rowWidth)
	for i := range s.rows {
		nums = appendFixed(nums, &s.rows[i])
	}
	return b, expires, nums
}

// headWidth is the bytes of a row's columns in state.bin's head but its
// id and expiry: where its id ends, its version, its facts.
const headWidth = 4 + 4 + 1

// orderAt returns the index of the row k-th by rank: of Order, or of the
// base's order while no other was sorted (readStore checked it, and does
// not decode it: a minute looks up a few of a million).
func (s *store) orderAt(k int) int {
	if s.Order == nil {
		return int(u32At(s.baseOrder, k))
	}
	return int(s.Order[k])
}

// orderSection returns the rank order of state.bin: each index four
// bytes.
func (s *store) orderSection() []byte {
	if s.Order == nil {
		return []byte(s.baseOrder)
	}
	b := make([]byte, 0, 4*len(s.Order))
	for _, o := range s.Order {
		b = binary.LittleEndian.AppendUint32(b, o)
	}
	return b
}

// file returns state.bin with data's codec: its head (magic, the head's
// length in bytes and the number of rows, eight bytes each, the JSON of
// meta, the rows' columns, the rank order, the record of the index's
// parts, the CRC-32C of each block of rowsBlock rows' numbers, when each
// row's files expire, and the head's checksum), then the rows' numbers.
// The expiries are last, so that a reader can keep the head before them
// and pass over them (readBase).
func (enc encoded) file() []byte {
	sums := blockSums(enc.nums)
	e := durable.NewEncoder(storeMagic, 16+len(enc.meta)+len(enc.rows)+len(enc.order)+len(enc.parts)+len(sums)+len(enc.expires)+16+len(enc.nums))
	e.Uint64(0) // the head's length, once known
	e.Uint64(uint64(enc.n))
	e.String(string(enc.meta))
	e.Raw(enc.rows)
	e.Raw(enc.order)
	e.Raw(enc.parts)
	e.Raw(sums)
	e.Raw(enc.expires)
	binary.LittleEndian.PutUint64(e.Bytes()[len(storeMagic):], uint64(e.Len()+4))
	return append(e.Finish(), enc.nums...)
}

// encodeParts returns the record of index.json's parts: their number,
// then each one's rows and the FNV-64a of its bytes, some 10 bytes a part
// (a part's first id is that of the row after the parts before it).
func encodeParts(parts []indexPart) []byte {
	e := durable.NewEncoder("", 2+len(parts)*10)
	e.Uvarint(uint64(len(parts)))
	for _, op := range parts {
		e.Uvarint(uint64(op.Rows))
		e.Uint64(op.Sum)
	}
	return e.Bytes()
}

// decodeParts reads what encodeParts wrote of parts over the rows of s;
// parts that do not cover the rows fail d.
func (s *store) decodeParts(d *durable.Decoder) []indexPart {
	rows := s.n()
	n := d.Count(9)
	parts := make([]indexPart, 0, n)
	lo := 0
	for range n {
		k := d.Uvarint()
		sum := d.Uint64()
		if k == 0 || k > uint64(rows-lo) {
			d.Fail("index parts")
			return nil
		}
		parts = append(parts, indexPart{First: s.idOf(lo), Rows: int(k), Sum: sum})
		lo += int(k)
	}
	if n > 0 && lo != rows {
		d.Fail("index parts")
		return nil
	}
	return parts
}

// rowWidth is the bytes of a row's numbers (appendFixed).
const rowWidth = 86

// appendFixed appends the numbers of r, little-endian: its rank, address
// hash, last check, uptime, tools, next plan, expiry, cadence and its
// files' hashes (eight bytes each), its tool problems (four), its status
// with 0x80 when paused, whether it speaks 2026-07-28 (a byte each).
func appendFixed(b []byte, r *row) []byte {
	for _, v := range [...]uint64{uint64(r.Rank), r.URLSum, uint64(r.LastCheck), uint64(r.Uptime7d), uint64(r.Tools),
		uint64(r.PlanNext), uint64(r.Expires), uint64(r.EffCad), r.HTMLSum, r.StripSum} {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(r.Problems))
	st := r.status
	if r.Paused {
		st |= 0x80
	}
	return append(b, st, boolByte(r.Speaks))
}

// decodeFixed reads what appendFixed wrote, rowWidth bytes of b, into r,
// and reports whether its status is one of data.Outcomes.
func decodeFixed[T string | []byte](b T, r *row) bool {
	b = b[:rowWidth]
	r.Rank = int(le64(b[0:]))
	r.URLSum = le64(b[8:])
	r.LastCheck = int64(le64(b[16:]))
	r.Uptime7d = int64(le64(b[24:]))
	r.Tools = int64(le64(b[32:]))
	r.PlanNext = int64(le64(b[40:]))
	r.Expires = int64(le64(b[48:]))
	r.EffCad = int64(le64(b[56:]))
	r.HTMLSum = le64(b[64:])
	r.StripSum = le64(b[72:])
	r.Problems = int32(le32(b[80:]))
	st := b[84]
	r.Paused, r.status = st&0x80 != 0, st&0x7f
	r.Speaks = b[85] != 0
	return int(r.status) < len(data.Outcomes)
}

// le64 and le32 read the first eight and four bytes of b, little-endian.
func le64[T string | []byte](b T) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

func le32[T string | []byte](b T) uint32 {
	_ = b[3]
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// appendLogRow appends the row r of s as the log holds it: its id and
// protocol version (strings), its numbers (appendFixed).
func (s *store) appendLogRow(e *durable.Encoder, r *row) {
	e.String(s.id(r))
	e.String(r.Protocol())
	e.Raw(appendFixed(make([]byte, 0, rowWidth), r))
}

// decodeLogRow reads a row appendLogRow wrote into r, and returns its id,
// which r has where it is in d's text. A bad status fails d.
func decodeLogRow(d *durable.Decoder, r *row, pc *protocolCache) (id string) {
	id = d.String()
	r.idAt, r.idLen = uint32(d.Offset()-len(id)), uint32(len(id))
	r.protocol = pc.number(d.String())
	if b := d.Raw(rowWidth); d.Err() == nil && !decodeFixed(b, r) {
		d.Fail("status")
	}
	return id
}

// decodeRow reads a row of the layout before v6, as varints (in state.bin
// up to v5, and in a log v1), into r: v2 without its facts, v3 without
// its hashes, and returns its id, which r has where it is in d's text. A
// bad status fails d.
func decodeRow(d *durable.Decoder, r *row, v2, v3 bool, pc *protocolCache) (id string) {
	id = d.String()
	r.idAt, r.idLen = uint32(d.Offset()-len(id)), uint32(len(id))
	r.Rank = int(d.Uvarint())
	r.URLSum = d.Uint64()
	st := d.Byte()
	r.Paused = st&0x80 != 0
	if int(st&0x7f) >= len(data.Outcomes) {
		d.Fail("status")
		return id
	}
	r.status = st & 0x7f
	for _, p := range []*int64{&r.LastCheck, &r.Uptime7d, &r.Tools, &r.PlanNext, &r.Expires, &r.EffCad} {
		*p = d.Varint()
	}
	if v2 {
		r.Problems = -1
		return id
	}
	r.protocol = pc.number(d.String())
	r.Speaks = d.Byte() != 0
	r.Problems = int32(d.Varint())
	if !v3 {
		r.HTMLSum, r.StripSum = d.Uint64(), d.Uint64()
	}
	return id
}

// decodeMeta reads the JSON of meta, its maps never nil, and the record
// of the index's parts a v4 record keeps in it.
func decodeMeta(b string) (meta, error) {
	m := newStore().Meta
	v4 := struct {
		*meta
		Index []indexPart `json:"index"`
	}{meta: &m}
	if err := json.Unmarshal([]byte(b), &v4); err != nil {
		return m, fmt.Errorf("%w: meta: %v", errCorrupt, err)
	}
	m.Index = v4.Index
	if m.Journals == nil {
		m.Journals = map[string]journalMark{}
	}
	if m.Parts == nil {
		m.Parts = map[string]int64{}
	}
	if m.Plans == nil {
		m.Plans = map[string]fileSig{}
	}
	if m.Sums == nil {
		m.Sums = map[string]uint64{}
	}
	return m, nil
}

var errCorrupt = errors.New("corrupt site state")

// decodeStore reads a base of a layout before v6 (readStore reads one of
// v6 or v7), from the file's text and its CRC-32C as durable.ReadSummed returns
// them. Errors wrap errCorrupt.
func decodeStore(text string, sum uint32) (*store, error) {
	magic := storeMagic
	for _, m := range []string{storeMagicV5, storeMagicV4, storeMagicV3, storeMagicV2} {
		if strings.HasPrefix(text, m) {
			magic = m
		}
	}
	d, err := durable.NewDecoder(text, sum, magic, errCorrupt)
	if err != nil {
		return nil, err
	}
	s := newStore()
	s.baseMeta = d.String()
	if d.Err() == nil {
		if s.Meta, err = decodeMeta(s.baseMeta); err != nil {
			return nil, err
		}
	}
	s.ids, s.old = text, true
	s.decodeOldRows(d, magic)
	if magic == storeMagicV5 {
		s.Meta.Index = s.decodeParts(d)
	}
	if err := d.Close(); err != nil {
		return nil, err
	}
	s.readAsBase(text[len(text)-4:], int64(len(text))-4, int64(len(text)))
	return s, nil
}

// readAsBase notes that s is the base it was read as, a file of size
// bytes whose checksum is sum, the four bytes at sumAt, with no log read
// yet.
func (s *store) readAsBase(sum string, sumAt, size int64) {
	s.baseSum, s.baseSumAt, s.baseSize = sum, sumAt, size
	s.baseN, s.baseIndex = s.n(), slices.Clone(s.Meta.Index)
	s.log = logRead{fresh: true, meta: s.baseMeta, parts: s.baseIndex}
}

// decodeOldRows reads the rows and the rank order of a base of a layout
// before v6 (decodeRow) into s.
func (s *store) decodeOldRows(d *durable.Decoder, magic string) {
	v2, v3 := magic == storeMagicV2, magic == storeMagicV3
	n := d.Count(11)
	s.rows = make([]row, n)
	var pc protocolCache
	for i := range s.rows {
		decodeRow(d, &s.rows[i], v2, v3, &pc)
		if d.Err() != nil {
			break
		}
		s.factsPending = s.factsPending || s.rows[i].Problems < 0
	}
	s.Order = make([]uint32, n)
	for i := range s.Order {
		o := d.Uvarint()
		if o >= uint64(n) {
			d.Fail("order")
			break
		}
		s.Order[i] = uint32(o)
	}
}

// loadStore reads DATA/site/state.bin and the delta written since
// (applyDelta), decoding of its rows those that expire by due, Unix ms
// (readStore): the store keeps the file open to decode the others when
// asked, until close; of a v7 base, it checks the window of check blocks
// of the minute of due (checkBlocks). A missing one is (nil, nil): the
// site is built afresh; so is a damaged one, with the error naming it.
func loadStore(dataDir string, due int64, check int) (*store, error) {
	path := data.Dir(dataDir).SiteStore()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read site state: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read site state: %w", err)
	}
	s, err := readStore(f, fi.Size(), due, check)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read site state %s: %w", path, err)
	}
	if s.lazy == nil {
		f.Close()
	} else {
		s.lazy.file, s.lazy.path = f, path
	}
	if err := s.readDelta(dataDir); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// unfinishedPath marks a publish in progress; found by the next publish,
// it says the last one was killed part-way and may have left temporary
// files in the output directory.
func unfinishedPath(dataDir string) string { return filepath.Join(dataDir, "site", "publishing") }

// beginPublish removes the temporary files that a publish killed part-way
// left under out (a site build would ship them) and the spill of a
// rebuild killed part-way (spill.go), and marks this publish
// unfinished until finishPublish. The output is walked only after such a
// kill: an unfinished mark is left. It returns how many files it removed.
// The caller holds the site lock, so no other publish writes meanwhile.
func beginPublish(dataDir, out string) (removed int, err error) {
	mark := unfinishedPath(dataDir)
	if _, err := os.Stat(mark); err == nil {
		err := filepath.WalkDir(out, func(path string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() && durable.IsTempName(e.Name()) && os.Remove(path) == nil {
				removed++
			}
			return nil
		})
		if err != nil {
			return removed, fmt.Errorf("remove temporary files under %s: %w", out, err)
		}
		if err := removeSpills(dataDir); err != nil {
			return removed, err
		}
	}
	return removed, durable.WriteFileAtomic(mark, nil, 0o644)
}

// finishPublish removes the unfinished mark of a publish that ended.
func finishPublish(dataDir string) error {
	if err := os.Remove(unfinishedPath(dataDir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("finish publish: %w", err)
	}
	return nil
}

// boolByte encodes b as one byte of the site's record.
func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// feedPath is the directory feed's record: its newest Len entries,
// so a publish merges the changes of the servers it renders without
// reading every server's file.
func feedPath(dataDir string) string { return filepath.Join(dataDir, "site", "feed.json") }

// loadFeed reads the directory feed's record, of which sum is the
// FNV-64a as written (0 when unknown: a record of before the hash, or a
// publish killed after it wrote the file and before the site's record).
// None is empty, unless one was written (sum): then it is lost.
func loadFeed(dataDir string, sum uint64) ([]feed.Entry, error) {
	path := feedPath(dataDir)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && sum == 0 {
		return nil, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read feed record: %s is missing", path)
	}
	if err != nil {
		return nil, fmt.Errorf("read feed record: %w", err)
	}
	if got := fnv64a(b); sum != 0 && got != sum {
		return nil, fmt.Errorf("read feed record %s: not the bytes written (FNV-64a %016x, written %016x)", path, got, sum)
	}
	var es []feed.Entry
	if err := json.Unmarshal(b, &es); err != nil {
		return nil, fmt.Errorf("read feed record %s: %w", path, err)
	}
	return es, nil
}
