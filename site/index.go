package site

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/site/record"
)

// index.json is a head: the count of servers, the totals and the list of
// its parts, index/<hash>.json, each the rows of a range of ids, in id
// order. A part's rows change when one of its servers' does (a check
// moves its last_check), so a minute rewrites the parts of the servers it
// rendered and the head, not a row per listed server. A part's name is
// the FNV-64a of its bytes: a new version is a new file, written and
// flushed before the head naming it moves, and the file it replaces is
// removed only after the head and the site's record moved; a crash
// between leaves the previous head, whose parts are all there.
//
// Parts are ranges of ids, not buckets of a hash, so that composed they
// read in id order and a server added or removed changes the part its id
// falls in. Where a part starts depends on the ids alone, not on the
// history of the list: a part starts at a row whose id's FNV-64a is a
// multiple of indexPartRows/2, unless the part before has fewer than
// indexPartRows/2 rows, and after 4*indexPartRows rows at the latest. So
// parts hold 32 to 256 rows (the last may hold fewer), some 58 on
// average; a server added or removed moves at most the bounds near it;
// and a rebuild from nothing writes the very parts the minutes before
// wrote. indexPartRows balances the head (a
// line a part, rewritten every minute) against the parts (the rows of
// each one rewritten): at 100,000 servers and 100 changed a minute, some
// 200 KB of head and 0.8 MB of parts (a changed row rewrites some 8 KB).
const indexPartRows = 64

// partsReadBack is how many of index.json's parts a publish reads back,
// by default (checkParts).
const partsReadBack = 64

// indexDir is the directory of the parts under the output.
const indexDir = "index"

// indexPartFile is index/<hash>.json: its rows, in id order.
type indexPartFile struct {
	Rows []record.IndexRow `json:"rows"`
}

// indexPart is what the site's record keeps of a part: the id of its
// first row, its rows and the FNV-64a of its bytes as written, so that a
// publish neither reads a part back nor encodes the unchanged ones.
type indexPart struct {
	First string `json:"f"`
	Rows  int    `json:"n"`
	Sum   uint64 `json:"s"`
}

// partSpan is a part while a publish lays them out: its rows, lo to
// hi-1.
type partSpan struct {
	lo, hi int
	sum    uint64 // as written; 0 when never
	dirty  bool   // its rows may differ from those its sum was taken of
}

// partName is the name of the part whose bytes' FNV-64a is sum: its 16
// hex digits.
func partName(sum uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], sum)
	return hex.EncodeToString(b[:])
}

func partPath(sum uint64) string { return indexDir + "/" + partName(sum) + ".json" }

// startsPart reports whether an id starts a part when the part before
// has at least indexPartRows/2 rows: one id in indexPartRows/2 does, by
// its FNV-64a.
func startsPart(id string) bool {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return h%(indexPartRows/2) == 0
}

// layoutParts returns the parts of st's rows, dirty where their rows may
// differ from those of the record's part that starts at the same id: of
// another count, or one of them rendered this run (cand). relisted says
// the rows may not be those the record's parts were laid out over (the
// lists were read); when they are, the parts are the record's, found
// without a look at every id.
func layoutParts(st *store, cand map[string]bool, relisted bool) []partSpan {
	n := st.n()
	if n == 0 {
		return nil
	}
	spans := recordedParts(st)
	if spans == nil || relisted {
		spans = laidOutParts(st)
	}
	for id := range cand {
		if i := st.find(id); i >= 0 {
			k, found := slices.BinarySearchFunc(spans, i, func(s partSpan, i int) int { return s.lo - i })
			if !found {
				k--
			}
			spans[k].dirty = true
		}
	}
	return spans
}

// recordedParts returns the record's parts over st's rows, nil when they do
// not cover them, each row once, starting at the ids they name.
func recordedParts(st *store) []partSpan {
	spans := make([]partSpan, len(st.Meta.Index))
	lo := 0
	for k, op := range st.Meta.Index {
		if op.Rows <= 0 || lo+op.Rows > st.n() || st.idOf(lo) != op.First {
			return nil
		}
		spans[k] = partSpan{lo: lo, hi: lo + op.Rows, sum: op.Sum}
		lo += op.Rows
	}
	if lo != st.n() {
		return nil
	}
	return spans
}

// laidOutParts returns the parts of st's rows as the ids lay them out,
// dirty where the record has no part of the same first id and count.
func laidOutParts(st *store) []partSpan {
	n := st.n()
	starts := []int{0}
	for i, last := 1, 0; i < n; i++ {
		if d := i - last; d >= 4*indexPartRows || d >= indexPartRows/2 && startsPart(st.idOf(i)) {
			starts, last = append(starts, i), i
		}
	}
	old := make(map[string]indexPart, len(st.Meta.Index))
	for _, op := range st.Meta.Index {
		old[op.First] = op
	}
	spans := make([]partSpan, len(starts))
	for k, lo := range starts {
		hi := n
		if k+1 < len(starts) {
			hi = starts[k+1]
		}
		op, ok := old[st.idOf(lo)]
		spans[k] = partSpan{lo: lo, hi: hi, sum: op.Sum, dirty: !ok || op.Rows != hi-lo}
	}
	return spans
}

// encodePart returns the part of the rows lo to hi-1, decoded.
func encodePart(st *store, lo, hi int) []byte {
	b := make([]byte, 0, 16+(hi-lo)*112)
	b = append(b, `{"rows":[`...)
	for i := lo; i < hi; i++ {
		if i > lo {
			b = append(b, ',')
		}
		b = append(b, '\n')
		r := st.row(i)
		b = appendIndexRow(b, st.id(r), r)
	}
	return append(b, "\n]}\n"...)
}

// writeIndex writes the parts whose bytes changed, under out/index/, and
// stages index.json; the parts it replaced, and after a killed publish or
// in a rebuild every other file under index/, are removed once the head
// and the record naming the new ones moved. The record's parts become the
// new ones. A part the record does not name is created in place
// (writer.create): the index.json in place names only parts of the
// record, or of a publish killed after it moved index.json and before the
// record, whose files are there and are replaced.
func (p *publication) writeIndex(sweep bool) error {
	st, out := p.st, p.cfg.OutDir
	named := make(map[uint64]bool, len(st.Meta.Index))
	for _, op := range st.Meta.Index {
		named[op.Sum] = true
	}
	spans := layoutParts(st, p.cand, p.servers != nil || sweep)
	p.checkParts(spans)
	// Their workers read the rows of the parts to write: decoded first.
	for _, s := range spans {
		if s.dirty {
			st.loadRange(s.lo, s.hi)
		}
	}
	if err := st.err(); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(spans))
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for k := range next {
				s := &spans[k]
				b := encodePart(st, s.lo, s.hi)
				if sum := fnv64a(b); sum != s.sum {
					s.sum = sum
					write := p.w.create
					if named[sum] {
						write = p.w.write
					}
					errs[k] = write(filepath.Join(out, filepath.FromSlash(partPath(sum))), b)
				}
			}
		})
	}
	for k := range spans {
		if spans[k].dirty {
			next <- k
		}
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	keep := make(map[string]bool, len(spans))
	record := make([]indexPart, len(spans))
	for k, s := range spans {
		keep[partName(s.sum)+".json"] = true
		record[k] = indexPart{First: st.idOf(s.lo), Rows: s.hi - s.lo, Sum: s.sum}
	}
	var gone []string
	for _, op := range st.Meta.Index {
		gone = append(gone, partName(op.Sum)+".json")
	}
	if sweep {
		es, err := os.ReadDir(filepath.Join(out, indexDir))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("list index parts: %w", err)
		}
		for _, e := range es {
			gone = append(gone, e.Name())
		}
	}
	for _, name := range gone {
		if !keep[name] {
			p.w.removeAfter(filepath.Join(out, indexDir, name))
		}
	}
	st.Meta.Index = record
	head := encodeIndex(st)
	path := filepath.Join(out, "index.json")
	changed, sum := p.sharedChanged(path, head)
	if _, err := os.Stat(path); changed || err != nil {
		if err := p.w.stage(path, head); err != nil {
			return err
		}
	}
	st.Meta.Sums["index.json"] = sum
	return nil
}

// checkParts reads back a window of the parts the record says are
// written, and marks one that is missing or whose bytes are not those
// written (its name is their FNV-64a) to be written again: a part removed
// or damaged in the output is noticed though none of its rows changes,
// and a site build can compose the index again within the minute. The
// window is Config.partsReadBack parts (64: some 0.5 MB) and moves with
// the minute, so that every part is read within 7 minutes at 25,000
// servers (430 parts) and within some 4.5 hours at a million (17,000).
func (p *publication) checkParts(spans []partSpan) {
	if len(spans) == 0 {
		return
	}
	n := p.cfg.partsReadBack
	if n == 0 {
		n = partsReadBack
	}
	n = min(n, len(spans))
	start := window(p.now, n, len(spans))
	for j := range n {
		s := &spans[(start+j)%len(spans)]
		if s.dirty || s.sum == 0 {
			continue
		}
		path := filepath.Join(p.cfg.OutDir, filepath.FromSlash(partPath(s.sum)))
		b, err := os.ReadFile(path)
		if err == nil {
			if fnv64a(b) == s.sum {
				continue
			}
			err = errors.New("its bytes are not those written")
		}
		p.log.Warn("an index part is missing or damaged; writing it again", "path", path, "err", err)
		s.dirty, s.sum = true, 0
	}
}

var partPathRE = regexp.MustCompile(`^index/[0-9a-f]{16}\.json$`)

// ReadIndex reads index.json under dir and composes it with its parts
// into one IndexFile whose Rows are every listed server's, in id order,
// as a site build reads them. A part that is missing, is not where a part
// can be, or whose rows or hash are not those the head names is an error.
func ReadIndex(dir string) (record.IndexFile, error) {
	var f record.IndexFile
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return f, fmt.Errorf("read index: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("read index: %w", err)
	}
	f.Rows = make([]record.IndexRow, 0, min(f.Servers, len(f.Parts)*4*indexPartRows))
	for _, part := range f.Parts {
		if !partPathRE.MatchString(part.Path) {
			return f, fmt.Errorf("read index: part %q is not under index/", part.Path)
		}
		pb, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(part.Path)))
		if err != nil {
			return f, fmt.Errorf("read index part: %w", err)
		}
		if sum := partName(fnv64a(pb)); sum != part.Hash {
			return f, fmt.Errorf("read index part %s: hash %s, the head says %s", part.Path, sum, part.Hash)
		}
		var pf indexPartFile
		if err := json.Unmarshal(pb, &pf); err != nil {
			return f, fmt.Errorf("read index part %s: %w", part.Path, err)
		}
		if len(pf.Rows) != part.Rows || len(pf.Rows) == 0 || pf.Rows[0].ID != part.First || pf.Rows[len(pf.Rows)-1].ID != part.Last {
			return f, fmt.Errorf("read index part %s: its rows are not those the head names", part.Path)
		}
		f.Rows = append(f.Rows, pf.Rows...)
	}
	if len(f.Rows) != f.Servers {
		return f, fmt.Errorf("read index: %d rows in its parts, %d servers", len(f.Rows), f.Servers)
	}
	return f, nil
}

// marshalFile is the one JSON format of the published files: compact (a
// million servers' files add up), fields in declaration order, a final
// newline.
func marshalFile(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return append(b, '\n'), nil
}

// rowOf returns the index row of a rendered server.
func rowOf(f record.ServerFile) record.IndexRow {
	r := record.IndexRow{ID: f.ID, Rank: f.Rank, Status: f.Status, LastCheck: f.LastCheck, Uptime7d: f.Uptime.Week.Percent}
	if lr := f.LastResult; lr != nil && lr.Status == data.Working {
		r.Tools = &lr.ToolCount
	}
	return r
}

// indexRow returns the public index row of the stored row r of id.
func (r *row) indexRow(id string) record.IndexRow {
	ir := record.IndexRow{ID: id, Rank: r.Rank, Status: r.Status()}
	if r.Tools >= 0 {
		n := int(r.Tools)
		ir.Tools = &n
	}
	if r.LastCheck != 0 {
		ir.LastCheck = record.TimePtr(time.UnixMilli(r.LastCheck))
	}
	if r.Uptime7d >= 0 {
		p := float64(r.Uptime7d) / 100
		ir.Uptime7d = &p
	}
	return ir
}

// appendIndexRow appends the JSON of the stored row r of id exactly as
// json.Marshal(r.indexRow(id)) writes it, without its reflection:
// index.json has a row per listed server, a million of them.
func appendIndexRow(b []byte, id string, r *row) []byte {
	b = append(b, `{"id":`...)
	b = record.AppendString(b, id)
	b = append(b, `,"rank":`...)
	b = strconv.AppendInt(b, int64(r.Rank), 10)
	b = append(b, `,"status":"`...)
	b = append(b, r.Status()...)
	b = append(b, `","last_check":`...)
	if r.LastCheck == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = record.AppendTime(b, time.UnixMilli(r.LastCheck))
		b = append(b, '"')
	}
	b = append(b, `,"uptime_7d":`...)
	if r.Uptime7d < 0 {
		b = append(b, "null"...)
	} else {
		// Hundredths as the shortest decimal, as strconv formats
		// float64(u)/100: 100, 99.5, 99.45.
		b = strconv.AppendInt(b, r.Uptime7d/100, 10)
		if f := r.Uptime7d % 100; f != 0 {
			b = append(b, '.', byte('0'+f/10))
			if f%10 != 0 {
				b = append(b, byte('0'+f%10))
			}
		}
	}
	b = append(b, `,"tools":`...)
	if r.Tools < 0 {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, r.Tools, 10)
	}
	return append(b, '}')
}

// appendIndexPart appends the JSON of a part of index.json, the record's
// part op whose last row's id is last, exactly as json.Marshal writes its
// record.IndexPart, without its reflection or the strings it
// holds: a line each of the head's thousands, every minute.
func appendIndexPart(b []byte, op indexPart, last string) []byte {
	var sum [8]byte
	binary.BigEndian.PutUint64(sum[:], op.Sum)
	b = hex.AppendEncode(append(b, `{"path":"`+indexDir+`/`...), sum[:])
	b = append(b, `.json","first":`...)
	b = record.AppendString(b, op.First)
	b = append(b, `,"last":`...)
	b = record.AppendString(b, last)
	b = append(b, `,"rows":`...)
	b = strconv.AppendInt(b, int64(op.Rows), 10)
	b = hex.AppendEncode(append(b, `,"hash":"`...), sum[:])
	return append(b, `"}`...)
}

// indexHead returns index.json without its rows: the count of servers and
// the totals per status.
func indexHead(st *store) record.IndexFile {
	head := record.IndexFile{Servers: st.n()}
	counts, protocols, problems, pending := rowTotals(st)
	head.Protocols, head.ToolProblems, head.FactsPending = protocols, problems, pending
	for k, o := range data.Outcomes {
		head.Totals = append(head.Totals, record.StatusTotal{Status: o, Label: o.Label(), Count: counts[k]})
	}
	return head
}

// encodeIndex returns index.json, the head: the count of servers, the
// totals and the parts the site's record names (writeIndex), a line each.
func encodeIndex(st *store) []byte {
	head := indexHead(st)
	tb, _ := json.Marshal(head.Totals)
	pb, _ := json.Marshal(head.Protocols)
	b := make([]byte, 0, 192+len(tb)+len(pb)+len(st.Meta.Index)*120)
	b = append(b, `{"servers":`...)
	b = strconv.AppendInt(b, int64(head.Servers), 10)
	b = append(b, ",\n\"totals\":"...)
	b = append(b, tb...)
	b = append(b, ",\n\"protocols\":"...)
	b = append(b, pb...)
	b = append(b, `,"tool_problems":`...)
	b = strconv.AppendInt(b, int64(head.ToolProblems), 10)
	b = append(b, `,"facts_pending":`...)
	b = strconv.AppendInt(b, int64(head.FactsPending), 10)
	b = append(b, ",\n\"parts\":["...)
	lo := 0
	for k, op := range st.Meta.Index {
		if k > 0 {
			b = append(b, ',')
		}
		lo += op.Rows
		b = appendIndexPart(append(b, '\n'), op, st.idOf(lo-1))
	}
	return append(b, "\n]}\n"...)
}

// rowTotals returns the count per status (in the order of
// data.Outcomes), the protocol totals, how many servers have tool
// problems, and how many rows' facts are not read yet: of every row, the
// base's as counted when it was read and then the rows decoded since
// (store.counts), not a pass over a million rows each minute. A row's
// status and protocol version are numbers: they are counted by them, not
// hashed.
func rowTotals(st *store) ([]int, record.ProtocolTotals, int, int) {
	c := st.counts()
	t := record.ProtocolTotals{Speaks20260728: c.speaks, Versions: []record.VersionTotal{}}
	for v, n := range c.versions {
		if n > 0 {
			t.Versions = append(t.Versions, record.VersionTotal{Version: protocolName(uint32(v)), Count: n})
		}
	}
	slices.SortFunc(t.Versions, func(a, b record.VersionTotal) int { return strings.Compare(b.Version, a.Version) })
	return c.status[:len(data.Outcomes)], t, c.problems, c.pending
}

// factsBackfill is how many rows whose facts are not read yet (a site
// record of the layout before them, storeMagicV2) are rendered per run on
// top of those due anyway: a million are caught up within a working day,
// no run costing more than a few seconds more.
var factsBackfill = 2000

// backfillFacts makes candidates of up to factsBackfill rows whose facts
// are not read yet, on top of the candidates that are; once none is left
// it costs nothing more (a run saves the record only when it rendered
// every candidate).
func (p *publication) backfillFacts() {
	if !p.st.factsPending {
		return
	}
	p.st.factsPending = false
	n := 0
	for i := range p.st.n() {
		if id := p.st.idOf(i); p.st.factsOf(i).problems < 0 && !p.cand[id] {
			if n == factsBackfill {
				p.st.factsPending = true
				return
			}
			p.cand[id] = true
			n++
		}
	}
}

// setFacts sets a row's facts from its rendered file (index.json counts
// them: its head is encoded every publish).
func (r *row) setFacts(f record.ServerFile) {
	proto, speaks, problems := "", false, int32(0)
	if p := f.Protocol; p != nil {
		proto, speaks = p.Version, p.Speaks20260728
	}
	if lr := f.LastResult; lr != nil {
		problems = int32(len(lr.ToolProblems))
	}
	r.protocol, r.Speaks, r.Problems = protocolNumber(proto), speaks, problems
}
