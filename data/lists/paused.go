package lists

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"unicode"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// PausedEntry is one line of the paused list: a server id or an address.
type PausedEntry struct {
	Line  int    // 1-based line in the file
	Value string // as written, without comment and surrounding space
}

// IsAddress reports whether the entry names an address rather than an id.
func (e PausedEntry) IsAddress() bool { return strings.Contains(e.Value, "://") }

// PausedList is the parsed paused list (rule R1): one server id or address
// a line, '#' starts a comment, blank lines are ignored.
type PausedList struct {
	Name    string // file name, for messages
	Entries []PausedEntry
}

// ParsePausedList parses a paused list read from r; name is used in
// messages. A byte-order mark at its start is not part of the first entry.
// Bad lines (an entry with spaces or an invisible character in it, an
// address that is not an absolute URL) are returned as errors naming name:line and left out of list; a
// reader that acts on the list refuses it whole when bad is not empty
// (ReadPausedList), since leaving out a line would resume the checks of the
// server it names (rule R2). err is non-nil only when r cannot be read.
func ParsePausedList(name string, r io.Reader) (list PausedList, bad []error, err error) {
	list.Name = name
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if line == 1 {
			text = strings.TrimPrefix(text, "\ufeff")
		}
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		if strings.ContainsAny(text, " \t") {
			bad = append(bad, fmt.Errorf("%s:%d: more than one entry on a line: %q", name, line, text))
			continue
		}
		if strings.IndexFunc(text, invisible) >= 0 {
			bad = append(bad, fmt.Errorf("%s:%d: invisible character in entry: %q", name, line, text))
			continue
		}
		e := PausedEntry{Line: line, Value: text}
		if e.IsAddress() {
			u, perr := url.Parse(text)
			if perr != nil || u.Host == "" {
				bad = append(bad, fmt.Errorf("%s:%d: not an address: %q", name, line, text))
				continue
			}
		}
		list.Entries = append(list.Entries, e)
	}
	if err := sc.Err(); err != nil {
		return list, bad, fmt.Errorf("read paused list %s: %w", name, err)
	}
	return list, bad, nil
}

// invisible reports a control or format character (a byte-order mark, a
// zero-width space): an entry with one names no server it seems to name.
func invisible(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }

// ReadPausedList opens and parses the paused list at path, as
// ParsePausedList, and refuses it whole when a line does not parse: err
// then names each bad line path:line (rule R2: a failure to read the list
// never resumes checks).
func ReadPausedList(path string) (PausedList, error) {
	f, err := os.Open(path)
	if err != nil {
		return PausedList{Name: path}, fmt.Errorf("read paused list: %w", whatGoesThere(err, pausedListIs))
	}
	defer f.Close()
	list, bad, err := ParsePausedList(path, f)
	if err == nil && len(bad) > 0 {
		err = fmt.Errorf("read paused list %s: refused whole, %d bad lines: %w", path, len(bad), errors.Join(bad...))
	}
	if err != nil {
		return PausedList{Name: path}, err
	}
	return list, nil
}

// LoadPausedList reads the local paused list at path as ReadPausedList and
// keeps a copy of it under dir (data.Dir.PausedLocalCopy) as the last good one.
// When the list cannot be read or is refused, the last good copy stands,
// as for a list on GitHub (rule R2): it is returned, and the failure in
// stale, for the caller to log. Only with no good copy is it an error; then
// no plan must be made.
func LoadPausedList(dir, path string) (list PausedList, stale error, err error) {
	copyPath := data.Dir(dir).PausedLocalCopy()
	list, rerr := ReadPausedList(path)
	if rerr == nil {
		b, err := os.ReadFile(path)
		if err == nil {
			if old, cerr := os.ReadFile(copyPath); cerr != nil || !bytes.Equal(old, b) {
				err = durable.WriteFileAtomic(copyPath, b, 0o644)
			}
		}
		if err != nil {
			return list, fmt.Errorf("keep a copy of paused list %s: %w", path, err), nil
		}
		return list, nil, nil
	}
	good, cerr := ReadPausedList(copyPath)
	if cerr != nil {
		if errors.Is(cerr, os.ErrNotExist) {
			return list, nil, rerr
		}
		return list, nil, errors.Join(rerr, cerr)
	}
	return good, fmt.Errorf("%w; the last good copy %s stands", rerr, copyPath), nil
}

// NormalizeAddress returns the form in which a paused-list address and a
// listing are compared: the AddressKey (the one way of writing an address
// that shared addresses and their slot hash use: scheme and host as they are
// dialled, IDNA included, default port and fragment dropped), with one
// trailing slash forgiven, since an owner may write either.
func NormalizeAddress(raw string) string {
	return strings.TrimSuffix(data.AddressKey(strings.TrimSpace(raw)), "/")
}

// Match returns the ids of the listed servers the paused list names, by id or
// by address (an address pauses every server listed at it), with every
// server listed at the address of one named (widenPaused), and the entries
// that name no listed server. It indexes the few entries, not the servers:
// at a million servers a map of every id and address would cost a second
// at each change of a list.
func (p PausedList) Match(servers []data.Server) (paused map[string]bool, unmatched []PausedEntry) {
	named := map[string]bool{} // an entry's id, or its address (NormalizeAddress): whether a listed server has it
	addrs := 0
	for _, e := range p.Entries {
		named[e.key()] = false
		if e.IsAddress() {
			addrs++
		}
	}
	paused = make(map[string]bool)
	var hit []int // the servers named
	for i, s := range servers {
		if _, ok := named[s.ID]; ok && !strings.Contains(s.ID, "://") {
			named[s.ID] = true
			hit = append(hit, i)
		}
		if addrs > 0 && s.URL != "" {
			a := NormalizeAddress(s.URL)
			if _, ok := named[a]; ok {
				named[a] = true
				hit = append(hit, i)
			}
		}
	}
	for _, e := range p.Entries {
		if !named[e.key()] {
			unmatched = append(unmatched, e)
		}
	}
	for _, i := range hit {
		paused[servers[i].ID] = true
	}
	widenPaused(paused, servers, hit)
	return paused, unmatched
}

// key is what the entry is matched by: the id, or the address in the form
// NormalizeAddress gives. An id holds no "://", so the two never meet.
func (e PausedEntry) key() string {
	if e.IsAddress() {
		return NormalizeAddress(e.Value)
	}
	return e.Value
}

// widenPaused adds to paused every server listed at the address
// (AddressKey) of a paused one, servers[i] for each i of hit: the servers
// at one address are one endpoint, checked once for all,
// so a request naming one of them stops the checks of all, and each
// of their pages says so.
func widenPaused(paused map[string]bool, servers []data.Server, hit []int) {
	keys := map[string]bool{}
	for _, i := range hit {
		if s := servers[i]; s.URL != "" {
			keys[data.AddressKey(s.URL)] = true
		}
	}
	if len(keys) == 0 {
		return
	}
	for _, s := range servers {
		if s.URL != "" && !paused[s.ID] && keys[data.AddressKey(s.URL)] {
			paused[s.ID] = true
		}
	}
}

// PausedRemotePrefix starts a paused-list source that is not a local file
// but a file on GitHub (github:OWNER/REPO/PATH[@REF]), which only plan
// fetches; the commands that follow it read the copy plan keeps, at
// data.Dir.PausedCopy.
const PausedRemotePrefix = "github:"

// LocalPausedList returns the file a reader of the paused list opens for
// source: source itself, or the copy plan keeps of a remote list.
func LocalPausedList(dir, source string) string {
	if strings.HasPrefix(source, PausedRemotePrefix) {
		return data.Dir(dir).PausedCopy()
	}
	return source
}
