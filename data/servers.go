package data

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrEmptyList is returned by ParseServers when the ranked list holds no
// usable row: planning from it would stop every check, so no plan is made.
var ErrEmptyList = errors.New("no server in the ranked list")

// The bounds of a row of the ranked list: every id and address planned
// fits in a plan line any reader takes.
const (
	// MaxAddressBytes is the longest address checked (the limit browsers and
	// CDNs commonly keep); a longer one is listed as not checkable,
	// ReasonAddressTooLong.
	MaxAddressBytes = 2048
	// MaxIDBytes is the longest server id; a row with a longer one is set
	// aside.
	MaxIDBytes = 256
)

// serverColumns are the columns of the ranked list, in any order; other
// columns are ignored.
var serverColumns = []string{"id", "rank", "url", "added"}

// ReadServers reads the ranked list at path, as ParseServers.
func ReadServers(path string) ([]Server, []error, error) {
	text, err := readText(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read ranked list: %w", err)
	}
	return parseServers(path, text)
}

// ParseServers parses the ranked list: CSV with a header naming at least
// id, rank, url and added (other columns are ignored). url is empty for a
// server that only runs locally, else an absolute URL with a host; added is
// RFC 3339. Each bad row (missing id, duplicate id, rank not a positive
// integer, bad url, bad time) is returned in bad as an error naming
// name:line and left out; the other rows are returned sorted by rank, ties
// broken by id. err is non-nil when the header lacks a column or no row is
// usable (ErrEmptyList); then no plan must be made from it.
func ParseServers(name string, b []byte) (servers []Server, bad []error, err error) {
	return parseServers(name, string(b))
}

// parseServers is ParseServers of the list's text.
func parseServers(name, text string) (servers []Server, bad []error, err error) {
	if strings.IndexByte(text, '"') < 0 {
		return parseServersFast(name, text)
	}
	return parseServersCSV(name, text)
}

// parseServersCSV is ParseServers for a list with quoted fields.
func parseServersCSV(name, text string) (servers []Server, bad []error, err error) {
	r := csv.NewReader(strings.NewReader(text))
	r.ReuseRecord = true
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	head, err := r.Read()
	if err == io.EOF {
		return nil, nil, fmt.Errorf("read ranked list %s: %w", name, ErrEmptyList)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read ranked list %s: %w", name, err)
	}
	idx, err := headerIndex(name, head)
	if err != nil {
		return nil, nil, err
	}
	need := slices.Max(idx) + 1
	servers = make([]Server, 0, strings.Count(text, "\n"))
	seen := make(map[string]int, cap(servers))
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				return nil, bad, fmt.Errorf("read ranked list %s: %w", name, err)
			}
			bad = append(bad, fmt.Errorf("%s:%d: %w", name, pe.StartLine, pe.Err))
			continue
		}
		line, _ := r.FieldPos(0)
		if len(rec) < need {
			bad = append(bad, fmt.Errorf("%s:%d: %d columns, want at least %d", name, line, len(rec), need))
			continue
		}
		s, perr := parseServer(rec[idx[0]], rec[idx[1]], rec[idx[2]], rec[idx[3]])
		if perr != nil {
			bad = append(bad, fmt.Errorf("%s:%d: %w", name, line, perr))
			continue
		}
		if first, dup := seen[s.ID]; dup {
			bad = append(bad, fmt.Errorf("%s:%d: duplicate id %q (first on line %d)", name, line, s.ID, first))
			continue
		}
		seen[s.ID] = line
		servers = append(servers, s)
	}
	if len(servers) == 0 {
		return nil, bad, fmt.Errorf("read ranked list %s: %w", name, ErrEmptyList)
	}
	SortServers(servers)
	return servers, bad, nil
}

// parseServersFast is ParseServers for a list without quotes, the usual
// case, built for a million rows: the lines are split by hand in parallel
// chunks, every id and address is a substring of one copy of the file (one
// allocation, and neighbours in the list are neighbours in memory), and
// duplicates are found by a hash of the id (see firstOf).
func parseServersFast(name, text string) (servers []Server, bad []error, err error) {
	nl := strings.IndexByte(text, '\n')
	if nl < 0 {
		nl = len(text)
	}
	head := strings.Split(strings.TrimSuffix(text[:nl], "\r"), ",")
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
		servers []Server
		bad     []lineError
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
	all := make([]Server, slots[len(chunks)])
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
				fields = fields[:0]
				for {
					k := strings.IndexByte(row, ',')
					if k < 0 {
						fields = append(fields, row)
						break
					}
					fields = append(fields, row[:k])
					row = row[k+1:]
				}
				if len(fields) < need {
					c.bad = append(c.bad, lineError{ln, fmt.Errorf("%s:%d: %d columns, want at least %d", name, ln, len(fields), need)})
					continue
				}
				s, perr := parseServerFields(fields[idx[0]], fields[idx[1]], fields[idx[2]], fields[idx[3]], false)
				if perr != nil {
					c.bad = append(c.bad, lineError{ln, fmt.Errorf("%s:%d: %w", name, ln, perr)})
					continue
				}
				c.servers = append(c.servers, s)
				c.lines = append(c.lines, ln)
			}
			for k := range c.servers {
				c.hashes = append(c.hashes, StableHash(c.servers[k].ID, 0x6964))
			}
		})
	}
	wg.Wait()

	var badLines []lineError
	w := 0
	for _, c := range chunks {
		badLines = append(badLines, c.bad...)
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
			badLines = append(badLines, lineError{lines[i], fmt.Errorf("%s:%d: duplicate id %q (first on line %d)", name, lines[i], s.ID, lines[f])})
			continue
		}
		servers = append(servers, s)
	}
	clear(all[len(servers):]) // the strings of rows left out
	slices.SortStableFunc(badLines, func(a, b lineError) int { return a.line - b.line })
	for _, e := range badLines {
		bad = append(bad, e.err)
	}
	if len(servers) == 0 {
		return nil, bad, fmt.Errorf("read ranked list %s: %w", name, ErrEmptyList)
	}
	if !slices.IsSortedFunc(servers, compareServers) {
		SortServers(servers)
	}
	return servers, bad, nil
}

// firstOf returns for each server the index of the first with its id, -1
// for the first itself. hashes holds a hash of each id. The hashes are
// split by value among the cores, each with a table of its own (open
// addressing, linear probing, ids compared on equal hashes), so a million
// ids take a fraction of what a map of them takes.
func firstOf(servers []Server, hashes []uint64) []int32 {
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
					if e.hash == h && servers[e.at-1].ID == servers[i].ID {
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

// lineError is a bad row's error and its line.
type lineError struct {
	line int
	err  error
}

// parseServer checks and converts the four fields of one row of the CSV
// reader, which reuses its record: the strings are cloned.
func parseServer(id, rank, addr, added string) (Server, error) {
	return parseServerFields(id, rank, addr, added, true)
}

// parseServerFields checks and converts the four fields of one row; clone
// copies the strings out of the row.
func parseServerFields(id, rank, addr, added string, clone bool) (Server, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return Server{}, errors.New("missing id")
	}
	if strings.ContainsAny(id, " \t\r\n") {
		return Server{}, fmt.Errorf("id %q has a space in it", id)
	}
	n, err := strconv.Atoi(strings.TrimSpace(rank))
	if err != nil || n < 1 {
		return Server{}, fmt.Errorf("server %q: rank %q is not a positive integer", id, rank)
	}
	addr = strings.TrimSpace(addr)
	if addr != "" && FastHostOf(addr) == "" {
		return Server{}, fmt.Errorf("server %q: url %q is not an absolute address with a host", id, addr)
	}
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(added))
	if err != nil {
		return Server{}, fmt.Errorf("server %q: added %q is not an RFC 3339 time", id, added)
	}
	if clone {
		id, addr = strings.Clone(id), strings.Clone(addr)
	}
	return Server{ID: id, Rank: n, URL: addr, Added: t.UTC()}, nil
}

// compareServers orders servers by rank, ties broken by id.
func compareServers(a, b Server) int {
	if a.Rank != b.Rank {
		return a.Rank - b.Rank
	}
	return strings.Compare(a.ID, b.ID)
}

// FastHostOf returns HostOf(rawURL), parsing the common shape
// scheme://host[:port][/path] by hand: the planner needs the host of every
// server every minute, and url.Parse of a million addresses takes a third
// of a second. Anything unusual goes to HostOf.
func FastHostOf(rawURL string) string {
	i := strings.Index(rawURL, "://")
	if i <= 0 {
		return HostOf(rawURL)
	}
	for _, c := range []byte(rawURL[:i]) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return HostOf(rawURL)
		}
	}
	rest := rawURL[i+3:]
	end := len(rest)
	for k := 0; k < len(rest); k++ {
		c := rest[k]
		if c <= ' ' || c == 0x7f || c == '%' || c >= 0x80 {
			return HostOf(rawURL) // let url.Parse judge escapes and control bytes
		}
		if end == len(rest) && (c == '/' || c == '?' || c == '#') {
			end = k
		}
	}
	auth := rest[:end]
	colon := -1
	upper := false
	for k := 0; k < len(auth); k++ {
		c := auth[k]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '.':
			if colon >= 0 && !('0' <= c && c <= '9') {
				return HostOf(rawURL)
			}
		case 'A' <= c && c <= 'Z':
			if colon >= 0 {
				return HostOf(rawURL)
			}
			upper = true
		case c == ':' && colon < 0:
			colon = k
		default:
			return HostOf(rawURL)
		}
	}
	host := auth
	if colon >= 0 {
		host = auth[:colon]
	}
	if host == "" {
		return HostOf(rawURL)
	}
	if upper {
		host = strings.ToLower(host)
	}
	return strings.TrimSuffix(host, ".")
}

// SortServers sorts servers by rank, ties broken by id: the order of the
// ranked list.
func SortServers(servers []Server) { slices.SortFunc(servers, compareServers) }

// WriteServers writes servers as a ranked list CSV that ParseServers reads
// back: the header id,rank,url,added and one row per server.
func WriteServers(w io.Writer, servers []Server) error {
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
