package site

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"plug.directory/prober/data"
)

// storeMagic starts state.bin; a file without it is not ours, or of an
// older layout, and is rebuilt.
const storeMagic = "plug.directory site state v1\n"

// row is what the site remembers of one server between runs: enough to
// write its index row and to know when its files must be rendered again
// without loading its summary.
type row struct {
	ID        string
	Rank      int
	URLSum    uint64       // FNV-64a of its address, to notice a new one
	Status    data.Outcome // status shown
	Paused    bool
	LastCheck int64 // start of the last check, Unix ms; 0 when never checked
	Uptime7d  int64 // hundredths of a percent; -1 when nothing counted
	Tools     int64 // tool count of the last check if it listed them; -1 when unknown
	PlanNext  int64 // next start a plan file names, Unix ms; 0 when none
	Expires   int64 // when its files change without new input, Unix ms; 0 never
	EffCad    int64 // cadence its host's caps stretch it to, seconds; 0 when not stretched
}

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
	Journals map[string]journalMark `json:"journals"` // by journal name
	Parts    map[string]int64       `json:"parts"`    // Parquet part, relative to DATA -> size folded in
	Plans    map[string]fileSig     `json:"plans"`    // plan file, relative to DATA -> signature read
}

// journalMark is how much of a journal was folded in.
type journalMark struct {
	Size int64 `json:"size"` // bytes when read
	Done int   `json:"done"` // results folded in
}

// store is the content of DATA/site/state.bin.
type store struct {
	Meta  meta
	Rows  []row    // sorted by id
	Order []uint32 // indexes of Rows sorted by rank, ties by id
}

func newStore() *store {
	return &store{Meta: meta{Journals: map[string]journalMark{}, Parts: map[string]int64{}, Plans: map[string]fileSig{}}}
}

func storePath(dataDir string) string { return filepath.Join(dataDir, "site", "state.bin") }

// olderPath is where the checks of a server older than its published
// history, but within the uptime windows, are kept.
func olderPath(dataDir, id string) string {
	return filepath.Join(dataDir, "site", "older", filepath.FromSlash(id)+".json")
}

// find returns the index of the row of id, or -1.
func (s *store) find(id string) int {
	i, ok := slices.BinarySearchFunc(s.Rows, id, func(r row, id string) int { return strings.Compare(r.ID, id) })
	if !ok {
		return -1
	}
	return i
}

// sortOrder recomputes Order from Rows.
func (s *store) sortOrder() {
	s.Order = make([]uint32, len(s.Rows))
	for i := range s.Order {
		s.Order[i] = uint32(i)
	}
	slices.SortFunc(s.Order, func(a, b uint32) int {
		if d := s.Rows[a].Rank - s.Rows[b].Rank; d != 0 {
			return d
		}
		return strings.Compare(s.Rows[a].ID, s.Rows[b].ID)
	})
}

var outcomeIndex = func() map[data.Outcome]byte {
	m := map[data.Outcome]byte{}
	for i, o := range data.Outcomes {
		m[o] = byte(i)
	}
	return m
}()

// encode writes the store: magic, the length and JSON of meta, then the
// rows in a compact binary form and the rank order.
func (s *store) encode() ([]byte, error) {
	mb, err := json.Marshal(s.Meta)
	if err != nil {
		return nil, fmt.Errorf("encode site state: %w", err)
	}
	b := make([]byte, 0, len(storeMagic)+len(mb)+len(s.Rows)*64)
	b = append(b, storeMagic...)
	b = binary.AppendUvarint(b, uint64(len(mb)))
	b = append(b, mb...)
	b = binary.AppendUvarint(b, uint64(len(s.Rows)))
	for _, r := range s.Rows {
		b = binary.AppendUvarint(b, uint64(len(r.ID)))
		b = append(b, r.ID...)
		b = binary.AppendUvarint(b, uint64(r.Rank))
		b = binary.LittleEndian.AppendUint64(b, r.URLSum)
		st := outcomeIndex[r.Status]
		if r.Paused {
			st |= 0x80
		}
		b = append(b, st)
		for _, v := range []int64{r.LastCheck, r.Uptime7d, r.Tools, r.PlanNext, r.Expires, r.EffCad} {
			b = binary.AppendVarint(b, v)
		}
	}
	for _, o := range s.Order {
		b = binary.AppendUvarint(b, uint64(o))
	}
	return b, nil
}

var errCorrupt = errors.New("corrupt site state")

// decodeStore reads what encode wrote.
func decodeStore(b []byte) (*store, error) {
	if !bytes.HasPrefix(b, []byte(storeMagic)) {
		return nil, fmt.Errorf("%w: no header", errCorrupt)
	}
	b = b[len(storeMagic):]
	uv := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return v
	}
	sv := func() int64 {
		v, n := binary.Varint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return v
	}
	s := newStore()
	ml := uv()
	if ml > uint64(len(b)) {
		return nil, fmt.Errorf("%w: meta", errCorrupt)
	}
	if err := json.Unmarshal(b[:ml], &s.Meta); err != nil {
		return nil, fmt.Errorf("%w: meta: %v", errCorrupt, err)
	}
	b = b[ml:]
	if s.Meta.Journals == nil {
		s.Meta.Journals = map[string]journalMark{}
	}
	if s.Meta.Parts == nil {
		s.Meta.Parts = map[string]int64{}
	}
	if s.Meta.Plans == nil {
		s.Meta.Plans = map[string]fileSig{}
	}
	n := uv()
	if n > uint64(len(b)) {
		return nil, fmt.Errorf("%w: %d rows", errCorrupt, n)
	}
	s.Rows = make([]row, n)
	for i := range s.Rows {
		r := &s.Rows[i]
		l := uv()
		if l > uint64(len(b)) {
			return nil, fmt.Errorf("%w: row %d", errCorrupt, i)
		}
		r.ID = string(b[:l])
		b = b[l:]
		r.Rank = int(uv())
		if len(b) < 9 {
			return nil, fmt.Errorf("%w: row %d", errCorrupt, i)
		}
		r.URLSum = binary.LittleEndian.Uint64(b)
		st := b[8]
		b = b[9:]
		r.Paused = st&0x80 != 0
		if int(st&0x7f) >= len(data.Outcomes) {
			return nil, fmt.Errorf("%w: row %d status", errCorrupt, i)
		}
		r.Status = data.Outcomes[st&0x7f]
		for _, p := range []*int64{&r.LastCheck, &r.Uptime7d, &r.Tools, &r.PlanNext, &r.Expires, &r.EffCad} {
			*p = sv()
		}
		if b == nil {
			return nil, fmt.Errorf("%w: row %d", errCorrupt, i)
		}
	}
	s.Order = make([]uint32, n)
	for i := range s.Order {
		o := uv()
		if b == nil || o >= n {
			return nil, fmt.Errorf("%w: order", errCorrupt)
		}
		s.Order[i] = uint32(o)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the end", errCorrupt, len(b))
	}
	return s, nil
}

// loadStore reads DATA/site/state.bin. A missing one is (nil, nil): the
// site is built afresh.
func loadStore(dataDir string) (*store, error) {
	path := storePath(dataDir)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read site state: %w", err)
	}
	s, err := decodeStore(b)
	if err != nil {
		return nil, fmt.Errorf("read site state %s: %w", path, err)
	}
	return s, nil
}
