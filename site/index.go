package site

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sync"

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

// partSpan is a part while a publish lays them out: its rows,
// st.Rows[lo:hi].
type partSpan struct {
	lo, hi int
	sum    uint64 // as written; 0 when never
	dirty  bool   // its rows may differ from those its sum was taken of
}

func partName(sum uint64) string { return fmt.Sprintf("%016x", sum) }

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

// layoutParts returns the parts of st.Rows, dirty where their rows may
// differ from those of the record's part that starts at the same id: of
// another count, or one of them rendered this run (cand).
func layoutParts(st *store, cand map[string]bool) []partSpan {
	n := len(st.Rows)
	if n == 0 {
		return nil
	}
	starts := []int{0}
	for i, last := 1, 0; i < n; i++ {
		if d := i - last; d >= 4*indexPartRows || d >= indexPartRows/2 && startsPart(st.Rows[i].ID) {
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
		op, ok := old[st.Rows[lo].ID]
		spans[k] = partSpan{lo: lo, hi: hi, sum: op.Sum, dirty: !ok || op.Rows != hi-lo}
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

// encodePart returns the part of the rows st.Rows[lo:hi].
func encodePart(st *store, lo, hi int) []byte {
	b := make([]byte, 0, 16+(hi-lo)*112)
	b = append(b, `{"rows":[`...)
	for i := lo; i < hi; i++ {
		if i > lo {
			b = append(b, ',')
		}
		b = append(b, '\n')
		b = appendIndexRow(b, &st.Rows[i])
	}
	return append(b, "\n]}\n"...)
}

// writeIndex writes the parts whose bytes changed, under out/index/, and
// stages index.json; the parts it replaced, and after a killed publish or
// in a rebuild every other file under index/, are removed once the head
// and the record naming the new ones moved. The record's parts become the
// new ones.
func (p *publication) writeIndex(sweep bool) error {
	st, out := p.st, p.cfg.OutDir
	spans := layoutParts(st, p.cand)
	var wg sync.WaitGroup
	errs := make([]error, len(spans))
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for k := range next {
				s := &spans[k]
				b := encodePart(st, s.lo, s.hi)
				h := fnv.New64a()
				h.Write(b)
				if sum := h.Sum64(); sum != s.sum {
					s.sum = sum
					errs[k] = p.w.write(filepath.Join(out, filepath.FromSlash(partPath(sum))), b)
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
		record[k] = indexPart{First: st.Rows[s.lo].ID, Rows: s.hi - s.lo, Sum: s.sum}
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
	changed, sum := p.w.changed(path, head, st.Meta.Sums["index.json"])
	if _, err := os.Stat(path); changed || err != nil {
		if err := p.w.stage(path, head); err != nil {
			return err
		}
	}
	st.Meta.Sums["index.json"] = sum
	return nil
}

// partsOf returns index.json's parts from the record's.
func partsOf(st *store) []record.IndexPart {
	parts := make([]record.IndexPart, len(st.Meta.Index))
	lo := 0
	for k, op := range st.Meta.Index {
		hi := lo + op.Rows
		parts[k] = record.IndexPart{Path: partPath(op.Sum), First: op.First, Last: st.Rows[hi-1].ID, Rows: op.Rows, Hash: partName(op.Sum)}
		lo = hi
	}
	return parts
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
		h := fnv.New64a()
		h.Write(pb)
		if sum := partName(h.Sum64()); sum != part.Hash {
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
