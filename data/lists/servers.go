// Package lists reads the two lists people edit, the ranked servers list
// (servers.go) and the paused list (paused.go), and keeps what the prober
// learns of them: the guard that refuses a list that lost too many servers
// at once (listguard.go), the daily notice of rows set aside
// (listnotice.go) and the record of pause changes (pauserecord.go). It is
// named for what it reads, the lists, as litestream names each of its
// packages for the storage it holds.
package lists

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// ErrEmptyList is returned by ReadServers when the ranked list holds no
// usable row: planning from it would stop every check, so no plan is made.
var ErrEmptyList = errors.New("no server in the ranked list")

// serverColumns are the columns of the ranked list, in any order; other
// columns are ignored.
var serverColumns = []string{"id", "rank", "url", "added"}

// ReadServers reads and parses the ranked list at path: CSV with a header naming at least
// id, rank, url and added (other columns are ignored), one row a line (a
// quoted field cannot span lines, so one unbalanced quote costs its own row,
// never the rows after it). url is empty for a server that only runs
// locally, else an absolute URL with a host of at most MaxAddressBytes;
// added is RFC 3339.
//
// Each bad row is returned in bad as a *RowError naming path:line. A row
// whose address does not parse or is too long is still listed, with URL ""
// and BadAddress saying why: its server is not_checkable, and stays on the
// site. Any other bad row (missing or duplicate id, an id that cannot name
// the site's files (checkID) or differs from another only in case, rank not
// a positive integer, bad time, bad quoting, too few columns) is set aside;
// of rows sharing an id, in any case, the first is kept. The servers are returned sorted
// by rank, ties broken by id. err is non-nil when the header lacks a column
// or no row is usable (ErrEmptyList); then no plan must be made from it.
func ReadServers(path string) ([]data.Server, []error, error) {
	text, err := durable.ReadText(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read ranked list: %w", whatGoesThere(err, rankedListIs))
	}
	return parseServers(path, text)
}

// parseServers is ReadServers of the list's text, built for a million
// rows: the lines are split by hand in parallel chunks, every id and
// address of an unquoted row is a substring of one copy of the file (one
// allocation, and neighbours in the list are neighbours in memory), and
// duplicates are found by a hash of the id (see firstOf).
func parseServers(name, text string) (servers []data.Server, bad []error, err error) {
	nl := strings.IndexByte(text, '\n')
	if nl < 0 {
		nl = len(text)
	}
	if strings.TrimSpace(text[:nl]) == "" {
		return nil, nil, fmt.Errorf("read ranked list %s: %w", name, ErrEmptyList)
	}
	head, err := splitRow(strings.TrimPrefix(strings.TrimSuffix(text[:nl], "\r"), "\ufeff"), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("read ranked list %s:1: header: %w", name, err)
	}
	idx, err := headerIndex(name, head)
	if err != nil {
		return nil, nil, err
	}
	need := slices.Max(idx) + 1
	body := text[min(nl+1, len(text)):]

	// Chunks end at line ends; each knows its first line number.
	n := max(1, min(runtime.GOMAXPROCS(0), len(body)/(1<<16)))
	type chunk struct {
		text    string
		line    int
		servers []data.Server
		bad     []*RowError
		lines   []int    // line of each server, for duplicate messages
		hashes  []uint64 // hash of each server's id
	}
	chunks := make([]*chunk, 0, n)
	line := 2
	for rest := body; len(rest) > 0; {
		end := len(rest)
		if len(chunks) < n-1 && len(body)/n < len(rest) {
			if k := strings.IndexByte(rest[len(body)/n:], '\n'); k >= 0 {
				end = len(body)/n + k + 1
			}
		}
		c := &chunk{text: rest[:end], line: line}
		chunks = append(chunks, c)
		line += strings.Count(c.text, "\n")
		rest = rest[end:]
	}
	// Each chunk's rows go to slots of its own in one array (one per line,
	// and one for a last line without its end), moved together below: a
	// million rows are not copied into a second array.
	slots := make([]int, len(chunks)+1)
	for k, c := range chunks {
		slots[k+1] = slots[k] + strings.Count(c.text, "\n") + 1
	}
	all := make([]data.Server, slots[len(chunks)])
	lines := make([]int, len(all))
	hashes := make([]uint64, len(all))
	for k, c := range chunks {
		lo, hi := slots[k], slots[k+1]
		c.servers, c.lines, c.hashes = all[lo:lo:hi], lines[lo:lo:hi], hashes[lo:lo:hi]
	}
	var wg sync.WaitGroup
	for _, c := range chunks {
		wg.Go(func() {
			fields := make([]string, 0, need+4)
			for ln, rest := c.line, c.text; len(rest) > 0; ln++ {
				row := rest
				if k := strings.IndexByte(rest, '\n'); k >= 0 {
					row, rest = rest[:k], rest[k+1:]
				} else {
					rest = ""
				}
				row = strings.TrimSuffix(row, "\r")
				if row == "" {
					continue
				}
				var err error
				if fields, err = splitRow(row, fields[:0]); err != nil {
					c.bad = append(c.bad, &RowError{Name: name, Line: ln, Why: WhyQuoting,
						Err: fmt.Errorf("%w in row %.120q", err, row)})
					continue
				}
				if len(fields) < need {
					c.bad = append(c.bad, &RowError{Name: name, Line: ln, Why: WhyColumns,
						Err: fmt.Errorf("%d columns, want at least %d", len(fields), need)})
					continue
				}
				s, rerr := parseServerFields(fields[idx[0]], fields[idx[1]], fields[idx[2]], fields[idx[3]])
				if rerr != nil {
					rerr.Name, rerr.Line = name, ln
					c.bad = append(c.bad, rerr)
					if !rerr.Kept {
						continue
					}
				}
				c.servers = append(c.servers, s)
				c.lines = append(c.lines, ln)
			}
			for k := range c.servers {
				c.hashes = append(c.hashes, data.StableHash(foldID(c.servers[k].ID), 0x6964))
			}
		})
	}
	wg.Wait()

	var rowErrs []*RowError
	w := 0
	for _, c := range chunks {
		rowErrs = append(rowErrs, c.bad...)
		copy(all[w:], c.servers)
		copy(lines[w:], c.lines)
		copy(hashes[w:], c.hashes)
		w += len(c.servers)
	}
	all, lines, hashes = all[:w], lines[:w], hashes[:w]
	first := firstOf(all, hashes)
	servers = all[:0] // in place: a row is never moved ahead of itself
	for i, s := range all {
		if f := first[i]; f >= 0 {
			e := &RowError{Name: name, Line: lines[i], Why: WhyDuplicate, Err: fmt.Errorf("duplicate id %q (first on line %d, kept)", s.ID, lines[f])}
			if s.ID != all[f].ID {
				e.Why, e.Err = WhyCaseTwin, fmt.Errorf("id %q is %q of line %d (kept) in another case: one file where case is ignored, as on macOS", s.ID, all[f].ID, lines[f])
			}
			rowErrs = append(rowErrs, e)
			continue
		}
		servers = append(servers, s)
	}
	clear(all[len(servers):]) // the strings of rows left out
	slices.SortStableFunc(rowErrs, func(a, b *RowError) int { return a.Line - b.Line })
	for _, e := range rowErrs {
		bad = append(bad, e)
	}
	if len(servers) == 0 {
		return nil, bad, fmt.Errorf("read ranked list %s: %w", name, ErrEmptyList)
	}
	if !slices.IsSortedFunc(servers, compareServers) {
		SortServers(servers)
	}
	return servers, bad, nil
}

// splitRow appends the fields of one row to fields: split at commas, or,
// when the row has a quote in it, read as one CSV record (RFC 4180 quoting,
// strictly: a bare or unbalanced quote is an error).
func splitRow(row string, fields []string) ([]string, error) {
	if strings.IndexByte(row, '"') < 0 {
		for {
			k := strings.IndexByte(row, ',')
			if k < 0 {
				return append(fields, row), nil
			}
			fields = append(fields, row[:k])
			row = row[k+1:]
		}
	}
	r := csv.NewReader(strings.NewReader(row))
	r.FieldsPerRecord = -1
	rec, err := r.Read()
	if err == nil {
		if _, err2 := r.Read(); err2 != io.EOF {
			err = errors.New("more than one record")
		}
	}
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fields, fmt.Errorf("bad quoting (%w)", err)
	}
	return append(fields, rec...), nil
}

// firstOf returns for each server the index of the first with its id in
// any case (foldID), -1 for the first itself. hashes holds a hash of each
// folded id. The hashes are split by value among the cores, each with a
// table of its own (open addressing, linear probing, ids compared on equal
// hashes), so a million ids take a fraction of what a map of them takes.
func firstOf(servers []data.Server, hashes []uint64) []int32 {
	first := make([]int32, len(servers))
	parts := uint64(max(1, min(runtime.GOMAXPROCS(0), len(servers)/4096)))
	size := 1
	for size < 2*len(servers)/int(parts)+16 {
		size *= 2
	}
	mask := uint64(size - 1)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() {
			type slot struct {
				hash uint64
				at   int32 // index in servers plus one; 0: empty
			}
			table := make([]slot, size)
			for i, h := range hashes {
				if (h>>32)%parts != p {
					continue
				}
				first[i] = -1
				for k := h & mask; ; k = (k + 1) & mask {
					e := &table[k]
					if e.at == 0 {
						*e = slot{h, int32(i + 1)}
						break
					}
					if e.hash == h && strings.EqualFold(servers[e.at-1].ID, servers[i].ID) {
						first[i] = e.at - 1
						break
					}
				}
			}
		})
	}
	wg.Wait()
	return first
}

// Why a row of the ranked list was set aside or listed as not checkable,
// as RowError.Why gives it: short words, counted in summaries.
const (
	WhyQuoting   = "bad quoting"
	WhyColumns   = "too few columns"
	WhyID        = "bad id"
	WhyRank      = "bad rank"
	WhyAdded     = "bad added time"
	WhyDuplicate = "duplicate id"
	WhyCaseTwin  = "id differs from another only in case"
)

// RowError is a bad row of the ranked list: set aside, or, when Kept,
// listed as a server that is not checkable (Why is then the reason its
// address cannot be checked).
type RowError struct {
	Name string // the list's file name
	Line int    // 1-based
	Why  string // one of the Why* words or, when Kept, a Reason*
	Kept bool   // the server is listed, not_checkable
	Err  error  // what is wrong with the row
}

// Error names the row name:line and what is wrong with it.
func (e *RowError) Error() string {
	if e.Kept {
		return fmt.Sprintf("%s:%d: %v: listed as not checkable (%s)", e.Name, e.Line, e.Err, e.Why)
	}
	return fmt.Sprintf("%s:%d: %v", e.Name, e.Line, e.Err)
}

// Unwrap returns what is wrong with the row.
func (e *RowError) Unwrap() error { return e.Err }

// SummarizeRows returns one line saying how many rows of the list name
// were set aside (counted from the *RowError values of bad) and how many of
// its servers are listed as not checkable, whatever made them so (a row
// whose address cannot be checked, a server listed without an address),
// and why; "" when there is neither.
func SummarizeRows(name string, servers []data.Server, bad []error) string {
	aside, kept := map[string]int{}, map[string]int{}
	var nAside, nKept int
	for _, err := range bad {
		var re *RowError
		if errors.As(err, &re) && !re.Kept {
			aside[re.Why]++
			nAside++
		}
	}
	for _, s := range servers {
		if why := s.NotCheckable(); why != "" {
			kept[why]++
			nKept++
		}
	}
	if nAside+nKept == 0 {
		return ""
	}
	counts := func(m map[string]int) string {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
		}
		return strings.Join(parts, ", ")
	}
	s := fmt.Sprintf("ranked list %s: %d servers listed; %d rows set aside", name, len(servers), nAside)
	if nAside > 0 {
		s += " (" + counts(aside) + ")"
	}
	s += fmt.Sprintf("; %d listed as not checkable", nKept)
	if nKept > 0 {
		s += " (" + counts(kept) + ")"
	}
	return s
}

// parseServerFields checks and converts the four fields of one row. A row
// whose address cannot be checked is returned with URL "", BadAddress set
// and a RowError that is Kept; any other error sets the row aside.
func parseServerFields(id, rank, addr, added string) (data.Server, *RowError) {
	id = strings.TrimSpace(id)
	if err := checkID(id); err != nil {
		return data.Server{}, &RowError{Why: WhyID, Err: err}
	}
	n, err := strconv.Atoi(strings.TrimSpace(rank))
	if err != nil || n < 1 {
		return data.Server{}, &RowError{Why: WhyRank, Err: fmt.Errorf("server %q: rank %q is not a positive integer", id, rank)}
	}
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(added))
	if err != nil {
		return data.Server{}, &RowError{Why: WhyAdded, Err: fmt.Errorf("server %q: added %q is not an RFC 3339 time", id, added)}
	}
	s := data.Server{ID: id, Rank: n, URL: strings.TrimSpace(addr), Added: t.UTC()}
	switch {
	case len(s.URL) > data.MaxAddressBytes:
		s.URL, s.BadAddress = "", data.DetailAddressTooLong
		return s, &RowError{Why: s.BadAddress, Kept: true, Err: fmt.Errorf("server %q: url %.60q... of %d bytes, over the %d checked", id, addr, len(addr), data.MaxAddressBytes)}
	case s.URL != "" && data.FastHostOf(s.URL) == "":
		s.URL, s.BadAddress = "", data.DetailAddressUnparsable
		return s, &RowError{Why: s.BadAddress, Kept: true, Err: fmt.Errorf("server %q: url %q is not an absolute address with a host", id, addr)}
	}
	return s, nil
}

// compareServers orders servers by rank, ties broken by id.
func compareServers(a, b data.Server) int {
	if a.Rank != b.Rank {
		return a.Rank - b.Rank
	}
	return strings.Compare(a.ID, b.ID)
}

// SortServers sorts servers by rank, ties broken by id: the order of the
// ranked list.
func SortServers(servers []data.Server) { slices.SortFunc(servers, compareServers) }

// WriteServers writes servers as a ranked list CSV that ReadServers reads
// back: the header id,rank,url,added and one row per server.
func WriteServers(w io.Writer, servers []data.Server) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(serverColumns); err != nil {
		return fmt.Errorf("write ranked list: %w", err)
	}
	for _, s := range servers {
		rec := []string{s.ID, strconv.Itoa(s.Rank), s.URL, s.Added.UTC().Format(time.RFC3339)}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("write ranked list: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write ranked list: %w", err)
	}
	return nil
}

// headerIndex returns, for each of serverColumns, its position in the
// header row head (names compared without case, space or a byte-order
// mark), or an error naming the first column missing.
func headerIndex(name string, head []string) ([]int, error) {
	col := make(map[string]int, len(head))
	for i, h := range head {
		col[strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))] = i
	}
	idx := make([]int, len(serverColumns))
	for i, c := range serverColumns {
		j, ok := col[c]
		if !ok {
			return nil, fmt.Errorf("read ranked list %s:1: no %q column in header", name, c)
		}
		idx[i] = j
	}
	return idx, nil
}

// SummaryLevel returns the level to log SummarizeRows's line at: a warning
// when rows are bad (set aside, or an address that does not parse), and
// information when the line only counts servers listed without an
// address, which a list may do on purpose (they show as not checkable).
func SummaryLevel(bad []error) slog.Level {
	if len(bad) > 0 {
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

// What the lists are, for the error of a list that is missing.
const (
	rankedListIs = "the ranked list goes there: CSV id,rank,url,added"
	pausedListIs = "the paused list goes there: one server id or address a line, may be empty"
)

// whatGoesThere adds to err, when the file it names is missing, what
// goes there (is), so the operator knows what to put where.
func whatGoesThere(err error, is string) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w (%s)", err, is)
	}
	return err
}
