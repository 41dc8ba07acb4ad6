package data

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrEmptyList is returned by ParseServers when the ranked list holds no
// usable row: planning from it would stop every check, so no plan is made.
var ErrEmptyList = errors.New("no server in the ranked list")

// serverColumns are the columns of the ranked list, in any order; other
// columns are ignored.
var serverColumns = []string{"id", "rank", "url", "added"}

// ReadServers reads the ranked list at path, as ParseServers.
func ReadServers(path string) ([]Server, []error, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read ranked list: %w", err)
	}
	return ParseServers(path, b)
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
	r := csv.NewReader(bytes.NewReader(b))
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
	col := make(map[string]int, len(serverColumns))
	for i, h := range head {
		col[strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))] = i
	}
	idx := make([]int, len(serverColumns))
	for i, c := range serverColumns {
		j, ok := col[c]
		if !ok {
			return nil, nil, fmt.Errorf("read ranked list %s:1: no %q column in header", name, c)
		}
		idx[i] = j
	}
	need := slices.Max(idx) + 1
	servers = make([]Server, 0, bytes.Count(b, []byte{'\n'}))
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

// parseServer checks and converts the four fields of one row. The strings
// are cloned: the CSV reader reuses its record.
func parseServer(id, rank, addr, added string) (Server, error) {
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
	if addr != "" {
		u, err := url.Parse(addr)
		if err != nil || !u.IsAbs() || u.Hostname() == "" {
			return Server{}, fmt.Errorf("server %q: url %q is not an absolute address with a host", id, addr)
		}
	}
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(added))
	if err != nil {
		return Server{}, fmt.Errorf("server %q: added %q is not an RFC 3339 time", id, added)
	}
	return Server{ID: strings.Clone(id), Rank: n, URL: strings.Clone(addr), Added: t.UTC()}, nil
}

// SortServers sorts servers by rank, ties broken by id: the order of the
// ranked list.
func SortServers(servers []Server) {
	slices.SortFunc(servers, func(a, b Server) int {
		if a.Rank != b.Rank {
			return a.Rank - b.Rank
		}
		return strings.Compare(a.ID, b.ID)
	})
}

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
