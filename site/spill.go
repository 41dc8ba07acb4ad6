package site

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/klauspost/compress/s2"
	"plug.directory/prober/data"
)

// A rebuild reads the whole history, a year of every server's checks:
// more than memory holds at scale. It writes each result it reads to a
// spill file of the batch of servers it belongs to (batches of
// consecutive ids), in the order read, and then renders one batch at a
// time with only that batch's results in memory (renderAll). A server's
// results, read back in the order they were written, are those it would
// have had in memory, in the same order: the files are the same. The
// files are binary records (appendResult) compressed with S2 in blocks of
// spillBlock (the benchmark's results: some 34 bytes each compressed, 61
// as JSON lines; the history holds 88 bytes a check in Parquet), so the
// spill takes less disk than the history does, and its open files little
// memory.

// spillBatchServers is the servers of a batch, and spillMaxBatches the
// most batches (spill files open at once): the results in memory at a
// time are those of max(spillBatchServers, servers/spillMaxBatches)
// servers.
const (
	spillBatchServers = 256
	spillMaxBatches   = 256
	spillBlock        = 64 << 10
	spillMaxRecord    = 64 << 20 // a length past it is not one written
)

// spillPrefix names the directory of a rebuild's spill under DATA/site;
// one a killed rebuild left is removed by the next rebuild.
const spillPrefix = "rebuild-spill-"

// spill holds a rebuild's results by batch of servers until rendered.
type spill struct {
	dir   string
	batch int // servers of a batch: rows [k*batch, (k+1)*batch) are batch k
	files []*os.File
	zs    []*s2.Writer
	count []int  // results written, by batch
	buf   []byte // the record being written
}

// newSpill returns the spill of a rebuild of servers rows, in batches of
// batch servers (0: spillBatchServers, or more to keep to
// spillMaxBatches), removing what a killed rebuild left.
func newSpill(dataDir string, servers, batch int) (*spill, error) {
	if err := removeSpills(dataDir); err != nil {
		return nil, err
	}
	siteDir := filepath.Join(dataDir, "site")
	if batch <= 0 {
		batch = max(spillBatchServers, (servers+spillMaxBatches-1)/spillMaxBatches)
	}
	if err := os.MkdirAll(siteDir, 0o755); err != nil {
		return nil, fmt.Errorf("create rebuild spill: %w", err)
	}
	dir, err := os.MkdirTemp(siteDir, spillPrefix)
	if err != nil {
		return nil, fmt.Errorf("create rebuild spill: %w", err)
	}
	n := max(1, (servers+batch-1)/batch)
	return &spill{dir: dir, batch: batch, files: make([]*os.File, n), zs: make([]*s2.Writer, n), count: make([]int, n)}, nil
}

// removeSpills removes the spills killed rebuilds left in dataDir.
func removeSpills(dataDir string) error {
	old, _ := filepath.Glob(filepath.Join(dataDir, "site", spillPrefix+"*"))
	for _, d := range old {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("remove rebuild spill %s: %w", d, err)
		}
	}
	return nil
}

// batches returns the number of batches.
func (s *spill) batches() int { return len(s.count) }

// add writes r, of the server of row i, to its batch's file.
func (s *spill) add(i int, r data.Result) error {
	k := i / s.batch
	if s.files[k] == nil {
		f, err := os.Create(filepath.Join(s.dir, fmt.Sprintf("batch-%04d.jsonl", k)))
		if err != nil {
			return fmt.Errorf("spill results: %w", err)
		}
		s.files[k], s.zs[k] = f, s2.NewWriter(f, s2.WriterBlockSize(spillBlock), s2.WriterConcurrency(1))
	}
	s.buf = appendResult(s.buf[:0], &r)
	s.count[k]++
	if _, err := s.zs[k].Write(s.buf); err != nil {
		return fmt.Errorf("spill results: %w", err)
	}
	return nil
}

// load returns the results of batch k by server id, each server's in the
// order added. Nothing is added after a load.
func (s *spill) load(k int) (map[string][]data.Result, error) {
	out := map[string][]data.Result{}
	f := s.files[k]
	if f == nil {
		return out, nil
	}
	if err := s.zs[k].Close(); err != nil {
		return nil, fmt.Errorf("spill results: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("read spilled results: %w", err)
	}
	in := bufio.NewReaderSize(s2.NewReader(f, s2.ReaderMaxBlockSize(spillBlock)), spillBlock)
	var buf []byte
	strs := map[string]string{}
	for range s.count[k] {
		n, err := binary.ReadUvarint(in)
		if err == nil && n > spillMaxRecord {
			err = fmt.Errorf("a record of %d bytes", n)
		}
		if err == nil {
			buf = slices.Grow(buf[:0], int(n))[:n]
			_, err = io.ReadFull(in, buf)
		}
		var r data.Result
		if err == nil {
			r, err = (&recordReader{b: buf, strs: strs}).result()
		}
		if err != nil {
			return nil, fmt.Errorf("read spilled results %s: %w", f.Name(), err)
		}
		out[r.ID] = append(out[r.ID], r)
	}
	return out, nil
}

// The spill's records are binary, a result each: its length (a uvarint)
// and its fields in the order of data.Result, strings and slices as their
// length and their elements, integers as varints, a time as its Unix
// seconds, nanoseconds and offset from UTC, a pointer as a byte saying
// whether it is nil. They read back as the JSON the spill held before
// (and the journal holds) reads back: what encoding/json drops
// (ToolDefs, ProberFault) is dropped, an empty slice reads nil, and a time
// comes back in UTC, the local zone or a zone of its offset
// (TestSpillCodecAsJSON); at a sixth of the CPU of JSON.

// appendResult appends the record of r to b.
func appendResult(b []byte, r *data.Result) []byte {
	start := len(b)
	b = append(b, make([]byte, binary.MaxVarintLen64)...) // room for the length
	body := len(b)
	for _, s := range []string{r.ID, r.URL, r.Host, r.Reason, string(r.Status), r.Detail} {
		b = appendString(b, s)
	}
	b = binary.AppendVarint(b, int64(r.HTTPStatus))
	for _, s := range []string{r.Protocol, r.Transport, r.ServerName, r.ServerVersion, r.ServerTitle, r.ServerDescription, r.ServerWebsite, r.KeyInfo} {
		b = appendString(b, s)
	}
	b = binary.AppendVarint(b, int64(r.ToolCount))
	b = appendStrings(b, r.Tools)
	b = appendString(b, r.ToolsHash)
	b = binary.AppendUvarint(b, uint64(len(r.ToolProblems)))
	for _, p := range r.ToolProblems {
		b = appendString(appendString(appendString(b, p.Tool), p.Rule), p.Message)
	}
	b = appendTime(appendTime(appendTime(b, r.Planned), r.Started), r.Finished)
	for _, n := range []int64{int64(r.Lateness), int64(r.Duration), int64(r.Requests), int64(r.Conns), r.BytesRead} {
		b = binary.AppendVarint(b, n)
	}
	b = appendTime(b, r.RetryAfter)
	b = appendString(b, r.ProberVersion)
	b = appendBool(b, r.TLS != nil)
	if t := r.TLS; t != nil {
		b = appendStrings(appendString(appendTime(appendString(b, t.Version), t.NotAfter), t.Issuer), t.Names)
	}
	b = appendBool(b, r.Timings != nil)
	if t := r.Timings; t != nil {
		for _, d := range []*time.Duration{t.DNS, t.Connect, t.TLS} {
			b = appendBool(b, d != nil)
			if d != nil {
				b = binary.AppendVarint(b, int64(*d))
			}
		}
		b = binary.AppendUvarint(b, uint64(len(t.FirstByte)))
		for _, d := range t.FirstByte {
			b = binary.AppendVarint(b, int64(d))
		}
	}
	b = appendBool(b, r.Support != nil)
	if s := r.Support; s != nil {
		b = appendStrings(b, s.Versions)
		b = appendBool(b, s.Session != nil)
		if s.Session != nil {
			b = appendBool(b, *s.Session)
		}
		b = appendString(b, s.Answers)
	}
	// The length goes at the end of the room left for it, the room's
	// unused bytes cut.
	var n [binary.MaxVarintLen64]byte
	l := binary.PutUvarint(n[:], uint64(len(b)-body))
	copy(b[body-l:], n[:l])
	return append(b[:start], b[body-l:]...)
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendStrings(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendTime(b []byte, t time.Time) []byte {
	_, off := t.Zone()
	return binary.AppendVarint(binary.AppendUvarint(binary.AppendVarint(b, t.Unix()), uint64(t.Nanosecond())), int64(off))
}

// recordReader decodes a spill record; the first error it meets sticks
// and what follows reads zero. The strings it reads are kept once in
// strs, when not nil: a batch's results repeat their server's id, URL
// and host, the prober's version, a certificate's issuer and names.
type recordReader struct {
	b    []byte
	err  error
	strs map[string]string
}

var errSpillRecord = errors.New("truncated spill record")

func (d *recordReader) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

// varint reads what binary.AppendVarint wrote: a uvarint of the value
// zig-zagged.
func (d *recordReader) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *recordReader) fail() {
	if d.err == nil {
		d.err = errSpillRecord
	}
	d.b = nil
}

func (d *recordReader) string() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	b := d.b[:n]
	d.b = d.b[n:]
	if s, ok := d.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if d.strs != nil {
		d.strs[s] = s
	}
	return s
}

func (d *recordReader) strings() []string {
	n := d.uvarint()
	if n == 0 || n > uint64(len(d.b)) {
		if n != 0 {
			d.fail()
		}
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = d.string()
	}
	return ss
}

func (d *recordReader) bool() bool {
	if len(d.b) == 0 {
		d.fail()
		return false
	}
	v := d.b[0] == 1
	d.b = d.b[1:]
	return v
}

func (d *recordReader) int() int { return int(d.varint()) }

func (d *recordReader) duration() time.Duration { return time.Duration(d.varint()) }

// time returns the time recorded as JSON would have read it back: in
// UTC at offset 0, in the local zone if its offset there is the one
// recorded, else in a zone of that offset.
func (d *recordReader) time() time.Time {
	sec, nsec, off := d.varint(), d.uvarint(), d.int()
	t := time.Unix(sec, int64(nsec))
	if off == 0 {
		return t.UTC()
	}
	if _, local := t.Zone(); local == off {
		return t
	}
	return t.In(time.FixedZone("", off))
}

// result decodes the body of a record (appendResult).
func (d *recordReader) result() (data.Result, error) {
	var r data.Result
	r.ID, r.URL, r.Host, r.Reason, r.Status, r.Detail = d.string(), d.string(), d.string(), d.string(), data.Outcome(d.string()), d.string()
	r.HTTPStatus = d.int()
	r.Protocol, r.Transport, r.ServerName, r.ServerVersion = d.string(), d.string(), d.string(), d.string()
	r.ServerTitle, r.ServerDescription, r.ServerWebsite, r.KeyInfo = d.string(), d.string(), d.string(), d.string()
	r.ToolCount, r.Tools, r.ToolsHash = d.int(), d.strings(), d.string()
	if n := d.uvarint(); n > 0 && n <= uint64(len(d.b)) {
		r.ToolProblems = make([]data.ToolProblem, n)
		for i := range r.ToolProblems {
			r.ToolProblems[i] = data.ToolProblem{Tool: d.string(), Rule: d.string(), Message: d.string()}
		}
	} else if n > 0 {
		d.fail()
	}
	r.Planned, r.Started, r.Finished = d.time(), d.time(), d.time()
	r.Lateness, r.Duration, r.Requests, r.Conns, r.BytesRead = d.duration(), d.duration(), d.int(), d.int(), d.varint()
	r.RetryAfter, r.ProberVersion = d.time(), d.string()
	if d.bool() {
		r.TLS = &data.TLSInfo{Version: d.string(), NotAfter: d.time(), Issuer: d.string(), Names: d.strings()}
	}
	if d.bool() {
		t := &data.Timings{}
		for _, p := range []**time.Duration{&t.DNS, &t.Connect, &t.TLS} {
			if d.bool() {
				v := d.duration()
				*p = &v
			}
		}
		if n := d.uvarint(); n > 0 && n <= uint64(len(d.b)) {
			t.FirstByte = make([]time.Duration, n)
			for i := range t.FirstByte {
				t.FirstByte[i] = d.duration()
			}
		} else if n > 0 {
			d.fail()
		}
		r.Timings = t
	}
	if d.bool() {
		s := &data.ProtocolSupport{Versions: d.strings()}
		if d.bool() {
			s.Session = new(d.bool())
		}
		s.Answers = d.string()
		r.Support = s
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = errors.New("spill record longer than its result")
	}
	return r, d.err
}

// remove closes and removes the spill's files.
func (s *spill) remove() error {
	var errs []error
	for _, f := range s.files {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	errs = append(errs, os.RemoveAll(s.dir))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove rebuild spill: %w", err)
	}
	return nil
}
