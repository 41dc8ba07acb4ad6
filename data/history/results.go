// Package history keeps the Parquet history of results
// (results/date=YYYY-MM-DD/*.parquet, results.go) and what is derived from
// it or kept beside it: the fold of journals into it (state.go), the
// per-server state and its file (statefile.go) rebuilt from the history
// when damaged (staterebuild.go), compaction of a day's parts
// (compact.go), the second copy and its scrub (replica.go, scrub.go) and
// the checksums of Parquet files (parquetsum.go). It is the only package
// that imports parquet-go. The state lives here, not in data/spool, because
// it is derived from the history and rebuilt from it under the same lock.
package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/internal/durable"
)

// ResultRow is one check in the Parquet history: every field of Result, with
// times as UTC timestamps in milliseconds and durations in milliseconds, so
// any Parquet reader understands them without Go's types.
type ResultRow struct {
	ID            string   `parquet:"id"`
	URL           string   `parquet:"url"`
	Host          string   `parquet:"host"`
	Reason        string   `parquet:"reason"`
	Status        string   `parquet:"status"`
	Label         string   `parquet:"label"`
	Detail        string   `parquet:"detail"`
	HTTPStatus    int32    `parquet:"http_status"`
	Protocol      string   `parquet:"protocol"`
	Transport     string   `parquet:"transport"`
	ServerName    string   `parquet:"server_name"`
	ServerVersion string   `parquet:"server_version"`
	ToolCount     int32    `parquet:"tool_count"`
	Tools         []string `parquet:"tools,list"`
	PlannedAt     int64    `parquet:"planned_at,timestamp(millisecond),optional"`
	StartedAt     int64    `parquet:"started_at,timestamp(millisecond)"`
	FinishedAt    int64    `parquet:"finished_at,timestamp(millisecond)"`
	LatenessMS    int64    `parquet:"lateness_ms"`
	DurationMS    int64    `parquet:"duration_ms"`
	Requests      int32    `parquet:"requests"`
	Conns         int32    `parquet:"conns"`
	BytesRead     int64    `parquet:"bytes_read"`
	RetryAfter    int64    `parquet:"retry_after,timestamp(millisecond),optional"`
	ProberVersion string   `parquet:"prober_version"`
	ToolsHash     string   `parquet:"tools_hash,optional"` // "" (null in older files) when no definitions were listed

	// What the check saw on its way (TLSInfo and
	// Timings): null where it does not apply and in the files written
	// before them; durations in milliseconds. (Fields of their own, not an
	// embedded struct: parquet-go v0.32 reads an embedded struct's nulls
	// back as zero values.)
	TLSVersion   *string  `parquet:"tls_version,optional"`                           // "TLS 1.3"
	CertNotAfter *int64   `parquet:"cert_not_after,timestamp(millisecond),optional"` // the leaf certificate's expiry; null: no certificate seen
	CertIssuer   *string  `parquet:"cert_issuer,optional"`                           // its issuer
	CertNames    []string `parquet:"cert_names,list"`                                // the DNS names it covers
	DNSMS        *int64   `parquet:"dns_ms,optional"`                                // name lookups
	ConnectMS    *int64   `parquet:"connect_ms,optional"`                            // TCP connects
	TLSMS        *int64   `parquet:"tls_ms,optional"`                                // TLS handshakes
	FirstByteMS  []int64  `parquet:"first_byte_ms,list"`                             // per answer, request written to its first byte
	// ToolProblems is the tool lint of the check (Result.ToolProblems)
	// as a JSON array; null when none.
	ToolProblems *string `parquet:"tool_problems,optional"`
	// How the server spoke (Result.Support): null
	// (an empty list) where the check learned nothing of it and in the
	// files written before.
	DiscoverVersions []string `parquet:"discover_versions,list"` // the versions server/discover listed
	Session          *bool    `parquet:"session,optional"`       // whether the server kept a session
	Answers          *string  `parquet:"answers,optional"`       // "json", "sse" or "mixed"
	// What the server says of itself and where it says to get a key:
	// null where it said nothing and in the files written before.
	ServerTitle       *string `parquet:"server_title,optional"`
	ServerDescription *string `parquet:"server_description,optional"`
	ServerWebsite     *string `parquet:"server_website,optional"`
	KeyInfo           *string `parquet:"key_info,optional"`
}

// setFacts sets the columns of r's TLSInfo and Timings.
func (f *ResultRow) setFacts(r data.Result) {
	if t := r.TLS; t != nil {
		f.CertIssuer, f.CertNames = &t.Issuer, t.Names
		if t.Version != "" {
			f.TLSVersion = &t.Version
		}
		ms := t.NotAfter.UnixMilli()
		f.CertNotAfter = &ms
	}
	if len(r.ToolProblems) > 0 {
		if b, err := json.Marshal(r.ToolProblems); err == nil { // plain strings: cannot fail
			p := string(b)
			f.ToolProblems = &p
		}
	}
	if p := r.Support; p != nil {
		f.DiscoverVersions, f.Session = p.Versions, p.Session
		if p.Answers != "" {
			f.Answers = &p.Answers
		}
	}
	for _, c := range aboutColumns(&r, f) {
		if text := *c.text; text != "" {
			*c.col = &text
		}
	}
	if t := r.Timings; t != nil {
		f.DNSMS, f.ConnectMS, f.TLSMS = data.MillisOf(t.DNS), data.MillisOf(t.Connect), data.MillisOf(t.TLS)
		for _, d := range t.FirstByte {
			f.FirstByteMS = append(f.FirstByteMS, d.Milliseconds())
		}
	}
}

// aboutColumns pairs what a server says of itself in a result (its title,
// description, website, where to get a key) with its column in a row.
func aboutColumns(r *data.Result, f *ResultRow) []struct {
	text *string
	col  **string
} {
	return []struct {
		text *string
		col  **string
	}{{&r.ServerTitle, &f.ServerTitle}, {&r.ServerDescription, &f.ServerDescription}, {&r.ServerWebsite, &f.ServerWebsite}, {&r.KeyInfo, &f.KeyInfo}}
}

// facts returns the TLSInfo and Timings of the columns, nil where none.
func (f ResultRow) facts() (*data.TLSInfo, *data.Timings) {
	var tls *data.TLSInfo
	if f.CertNotAfter != nil {
		tls = &data.TLSInfo{NotAfter: time.UnixMilli(*f.CertNotAfter).UTC(), Names: f.CertNames}
		if f.TLSVersion != nil {
			tls.Version = *f.TLSVersion
		}
		if f.CertIssuer != nil {
			tls.Issuer = *f.CertIssuer
		}
	}
	var tm *data.Timings
	if f.DNSMS != nil || f.ConnectMS != nil || f.TLSMS != nil || len(f.FirstByteMS) > 0 {
		tm = &data.Timings{DNS: data.FromMillis(f.DNSMS), Connect: data.FromMillis(f.ConnectMS), TLS: data.FromMillis(f.TLSMS)}
		for _, ms := range f.FirstByteMS {
			tm.FirstByte = append(tm.FirstByte, time.Duration(ms)*time.Millisecond)
		}
	}
	return tls, tm
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// RowOf converts a result to its Parquet row.
func RowOf(r data.Result) ResultRow {
	w := ResultRow{
		ID: r.ID, URL: r.URL, Host: r.Host, Reason: r.Reason,
		Status: string(r.Status), Label: r.Status.Label(), Detail: r.Detail,
		HTTPStatus: int32(r.HTTPStatus), Protocol: r.Protocol, Transport: r.Transport,
		ServerName: r.ServerName, ServerVersion: r.ServerVersion,
		ToolCount: int32(r.ToolCount), Tools: r.Tools,
		PlannedAt: millis(r.Planned), StartedAt: millis(r.Started), FinishedAt: millis(r.Finished),
		LatenessMS: r.Lateness.Milliseconds(), DurationMS: r.Duration.Milliseconds(),
		Requests: int32(r.Requests), Conns: int32(r.Conns), BytesRead: r.BytesRead,
		RetryAfter: millis(r.RetryAfter), ProberVersion: r.ProberVersion, ToolsHash: r.ToolsHash,
	}
	w.setFacts(r)
	return w
}

// Result converts a Parquet row back to a result. Times come back in UTC and
// at millisecond precision.
func (w ResultRow) Result() data.Result {
	r := data.Result{
		ID: w.ID, URL: w.URL, Host: w.Host, Reason: w.Reason,
		Status: data.Outcome(w.Status), Detail: w.Detail, HTTPStatus: int(w.HTTPStatus),
		Protocol: w.Protocol, Transport: w.Transport,
		ServerName: w.ServerName, ServerVersion: w.ServerVersion,
		ToolCount: int(w.ToolCount), Tools: w.Tools,
		Planned: fromMillis(w.PlannedAt), Started: fromMillis(w.StartedAt), Finished: fromMillis(w.FinishedAt),
		Lateness: time.Duration(w.LatenessMS) * time.Millisecond, Duration: time.Duration(w.DurationMS) * time.Millisecond,
		Requests: int(w.Requests), Conns: int(w.Conns), BytesRead: w.BytesRead,
		RetryAfter: fromMillis(w.RetryAfter), ProberVersion: w.ProberVersion, ToolsHash: w.ToolsHash,
	}
	r.TLS, r.Timings = w.facts()
	for _, c := range aboutColumns(&r, &w) {
		if *c.col != nil {
			*c.text = **c.col
		}
	}
	if len(w.DiscoverVersions) > 0 || w.Session != nil || w.Answers != nil {
		r.Support = &data.ProtocolSupport{Session: w.Session}
		if len(w.DiscoverVersions) > 0 {
			r.Support.Versions = w.DiscoverVersions
		}
		if w.Answers != nil {
			r.Support.Answers = *w.Answers
		}
	}
	if w.ToolProblems != nil {
		// Written by setFacts; a row whose column does not decode keeps
		// its check and loses only the advice.
		_ = json.Unmarshal([]byte(*w.ToolProblems), &r.ToolProblems)
	}
	return r
}

// writeHistory writes the results of one journal as one Parquet part per
// day, named after the journal. A part that already exists, or that a
// compacted file of its day lists as merged, was written by a fold that
// crashed before it removed the journal: it holds exactly these rows, so it
// is not written twice. That name is what makes the fold exactly-once.
func writeHistory(dir, journalPath string, rs []data.Result) error {
	base := strings.TrimSuffix(filepath.Base(journalPath), ".jsonl")
	byDay := map[string][]ResultRow{}
	for _, r := range rs {
		day := r.Started.UTC().Format("2006-01-02")
		byDay[day] = append(byDay[day], RowOf(r))
	}
	days := make([]string, 0, len(byDay))
	for d := range byDay {
		days = append(days, d)
	}
	sort.Strings(days)
	for _, d := range days {
		t, _ := time.Parse("2006-01-02", d)
		pdir := data.Dir(dir).ResultDay(t)
		name := "part-" + base + ".parquet"
		path := filepath.Join(pdir, name)
		if _, err := os.Stat(path); err == nil {
			continue
		}
		p, err := scanPartition(pdir)
		if err != nil {
			return err
		}
		if p.merged[name] {
			continue
		}
		// The second copy first: a part in place always has one, and a
		// copy whose part a crash kept from being written is that part
		// (Scrub puts it in place).
		b, err := encodeParquet(path, byDay[d])
		if err != nil {
			return err
		}
		if err := writeReplica(path, b); err != nil {
			return err
		}
		if err := durable.WriteFileAtomic(path, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// encodeParquet returns rows as the bytes of a history file, with their
// SumKey; path names it in errors.
func encodeParquet(path string, rows []ResultRow) ([]byte, error) {
	var buf bytes.Buffer
	w := newHistoryWriter(&buf)
	if _, err := w.Write(rows); err != nil {
		return nil, fmt.Errorf("write parquet %s: %w", path, err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("write parquet %s: %w", path, err)
	}
	return buf.Bytes(), nil
}

// ReadParquet reads every row of one Parquet history file. A file that
// cannot be read is an error naming it; one whose bytes do not decode, do
// not match its SumKey or make the decoder panic is damaged (the error
// wraps errParquetDamaged: see RecoverParquet).
func ReadParquet(path string) ([]data.Result, error) {
	var out []data.Result
	if _, err := ScanParquet(path, func(rs []data.Result) { out = append(out, rs...) }); err != nil {
		return nil, err
	}
	return out, nil
}

// ScanParquet is ReadParquet a batch of rows at a time, for a reader that
// does not keep them all: fn gets the file's results in order, at most
// scanBatch at a time in a slice it must not keep, and only a few batches
// and the file's footer are in memory (a compacted day is every check of
// the day). The file is decoded a batch ahead of fn, on another
// goroutine: the two take two cores. n is how many results fn got: on
// error, those before the damage (none when the checksum is wrong, which
// is known first).
func ScanParquet(path string, fn func([]data.Result)) (n int, err error) {
	const ahead = 2
	free, full := make(chan []data.Result, ahead+1), make(chan []data.Result, ahead)
	for range ahead + 1 {
		free <- nil
	}
	done := make(chan error, 1)
	stop := make(chan struct{})
	go func() {
		defer close(full)
		done <- scanParquet(path, func(rows []ResultRow) bool {
			var out []data.Result
			select {
			case out = <-free:
			case <-stop:
				return false
			}
			out = out[:0]
			for i := range rows {
				out = append(out, rows[i].Result())
			}
			full <- out
			return true
		})
	}()
	defer close(stop) // ends the decoder should fn panic
	for rs := range full {
		fn(rs)
		n += len(rs)
		free <- rs
	}
	return n, <-done
}

// scanBatch is the rows read at a time: a batch of 1,024 over fewer rows
// costs parquet-go a page read per missing row and column.
const scanBatch = 1024

// scanBuffer is parquet-go's read buffer, of each column being read.
const scanBuffer = 64 << 10

// readParquetRows is ReadParquet without the conversion to Result, of the
// columns of T (ResultRow, or fewer of its fields).
func readParquetRows[T any](path string) (rows []T, err error) {
	err = scanParquet(path, func(batch []T) bool { rows = append(rows, batch...); return true })
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// scanParquet reads the rows of the file at path, of the columns of T, a
// batch at a time (scanRows).
func scanParquet[T any](path string, fn func([]T) bool) (err error) {
	f, err := os.Open(path)
	if err == nil {
		defer f.Close()
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil {
			err = scanRows(f, fi.Size(), fn)
		}
	}
	if err != nil {
		return fmt.Errorf("read parquet %s: %w", path, err)
	}
	return nil
}

// scanRows reads the rows of the Parquet file of size bytes in r, checked
// by verifyParquet, a batch at a time into fn, until fn returns false: a
// damaged footer's row count is not trusted with an allocation. Errors
// wrap errParquetDamaged, a panic of the decoder too (not one of fn).
func scanRows[T any](r io.ReaderAt, size int64, fn func([]T) bool) error {
	var rd *parquet.GenericReader[T]
	defer func() {
		if rd != nil {
			rd.Close()
		}
	}()
	var n int64
	err := decoding(func() error {
		pf, err := parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true), parquet.ReadBufferSize(scanBuffer))
		if err != nil {
			return fmt.Errorf("%w: %w", errParquetDamaged, err)
		}
		if err := verifyParquet(r, size, pf); err != nil {
			return err
		}
		rd, n = parquet.NewGenericReader[T](pf), pf.NumRows()
		return nil
	})
	buf := make([]T, min(scanBatch, max(n, 1)))
	for err == nil {
		clear(buf) // the rows fn kept share no list with the next batch
		var got int
		err = decoding(func() (err error) {
			if got, err = rd.Read(buf); err != nil && !errors.Is(err, io.EOF) {
				err = fmt.Errorf("%w: %w", errParquetDamaged, err)
			}
			return err
		})
		if got > 0 && !fn(buf[:got]) {
			return nil
		}
	}
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// decoding runs f, a call of the Parquet decoder: a panic of it
// (parquet-go panics on some damaged input) is an error that wraps
// errParquetDamaged.
func decoding(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", errParquetDamaged, p)
		}
	}()
	return f()
}

// ReadHistory reads the results of the checks that started on the days
// from since to until (inclusive, UTC): the Parquet history plus the
// journals not folded yet, so a reader sees every completed check, once.
// Files that a compacted file lists as merged are not read (see Compact). A
// file that cannot be read is skipped and named in bad; the rest is
// returned, sorted by start time then id.
func ReadHistory(dir string, since, until time.Time) (results []data.Result, bad []error, err error) {
	lo, hi := since.UTC().Format("2006-01-02"), until.UTC().Format("2006-01-02")
	inRange := func(r data.Result) bool {
		d := r.Started.UTC().Format("2006-01-02")
		return d >= lo && d <= hi
	}
	// Journals first: one folded while we read is then in the Parquet read
	// after it, and the duplicate is dropped below.
	journals, err := spool.ListJournals(dir, false)
	if err != nil {
		return nil, nil, err
	}
	for _, j := range journals {
		rs, b, err := spool.ReadJournal(j.Path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		bad = append(bad, b...)
		if err != nil {
			bad = append(bad, err)
		}
		for _, r := range rs {
			if inRange(r) {
				results = append(results, r)
			}
		}
	}
	pdirs, err := data.Dir(dir).ResultDays()
	if err != nil {
		return nil, nil, fmt.Errorf("read history: %w", err)
	}
	for _, pdir := range pdirs {
		day := data.DayOf(pdir)
		if day < lo || day > hi {
			continue
		}
		rs, b := readPartition(pdir)
		results = append(results, rs...)
		bad = append(bad, b...)
	}
	return dedupe(results), bad, nil
}

// readPartition reads a day's live files. A file removed while it was read
// was merged meanwhile by a compaction: the day is read again, from the
// files it left.
func readPartition(pdir string) (results []data.Result, bad []error) {
	for attempt := 0; ; attempt++ {
		p, err := scanPartition(pdir)
		if err != nil {
			return nil, []error{err}
		}
		results, bad = nil, p.bad
		vanished := false
		for _, f := range p.live {
			rs, err := ReadParquet(f)
			if errors.Is(err, os.ErrNotExist) && attempt < 3 {
				vanished = true
				break
			}
			if err != nil {
				bad = append(bad, err)
				continue
			}
			results = append(results, rs...)
		}
		if !vanished {
			return results, bad
		}
	}
}

// dedupe sorts results by start then id and drops repeats of one check
// (same id and start, at the history's millisecond precision).
func dedupe(rs []data.Result) []data.Result {
	sort.SliceStable(rs, func(i, j int) bool {
		if a, b := rs[i].Started.UnixMilli(), rs[j].Started.UnixMilli(); a != b {
			return a < b
		}
		return rs[i].ID < rs[j].ID
	})
	out := rs[:0]
	for i, r := range rs {
		if i > 0 && r.ID == rs[i-1].ID && r.Started.UnixMilli() == rs[i-1].Started.UnixMilli() {
			continue
		}
		out = append(out, r)
	}
	return out
}
