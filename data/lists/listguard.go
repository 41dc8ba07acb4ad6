package lists

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// DefaultMaxShrink is the share of the last good ranked list's servers a
// new list may lose at once before it is refused (ListGuard).
const DefaultMaxShrink = 0.05

// ErrListShrank is wrapped by ListGuard.Read when the ranked list lost more
// servers at once than it may: the last good list stands.
var ErrListShrank = errors.New("the ranked list lost too many servers at once")

// listCopyMeta describes the last good copy, so that an unchanged list is
// known by its checksum without reading the copy.
type listCopyMeta struct {
	CRC32C  uint32 `json:"crc32c"`  // of the list's bytes
	Size    int    `json:"size"`    // bytes
	Servers int    `json:"servers"` // servers listed
}

// ListGuard reads the ranked list against the last good copy kept in the
// data directory, so that a list cut short or broken by one bad quote does
// not drop its servers from the plans and the site: a list that
// cannot be read, or that loses more than MaxShrink of the last good list's
// servers at once, is refused and the last good list stands, as the paused
// list's does (rule R2).
type ListGuard struct {
	Dir       string  // the data directory; "" reads the list unguarded
	MaxShrink float64 // share of the last good list's servers that may leave at once; 0 means DefaultMaxShrink
	Accept    bool    // take the list whatever it lost (plan -accept-shrink)
	ReadOnly  bool    // never replace the copy (publish reads what plan accepted)
}

// Read reads the ranked list at path as ReadServers does and holds it to
// the last good copy. A list taken replaces the copy (unless ReadOnly).
// When the list is refused (unreadable, empty, or shrunk by more than
// MaxShrink without Accept), the copy's servers are returned, and why the
// list was refused in stale, for the caller to log; bad still names the
// refused list's bad rows, so the operator sees which line broke it. err is
// non-nil only when no list can be had: then no plan must be made.
func (g ListGuard) Read(path string) (servers []data.Server, bad []error, stale, err error) {
	if g.Dir == "" {
		servers, bad, err = ReadServers(path)
		return servers, bad, nil, err
	}
	copyPath := data.Dir(g.Dir).ServersCopy()
	h := crc32.New(durable.Castagnoli)
	text, rerr := durable.ReadText(path, h)
	sum := h.Sum32()
	if rerr != nil {
		rerr = fmt.Errorf("read ranked list: %w", whatGoesThere(rerr, rankedListIs))
	} else {
		servers, bad, rerr = parseServers(path, text)
	}
	meta, hasMeta := readListMeta(copyPath)
	if rerr == nil && hasMeta && meta.CRC32C == sum && meta.Size == len(text) {
		return servers, bad, nil, nil // the list taken last time
	}
	old, _, cerr := ReadServers(copyPath)
	hasCopy := cerr == nil
	if cerr != nil && !errors.Is(cerr, os.ErrNotExist) {
		// A damaged copy is no reason to refuse a good list; it is
		// replaced below.
		stale = fmt.Errorf("last good list %s: %w", copyPath, cerr)
	}
	if rerr != nil {
		if !hasCopy {
			return nil, bad, nil, rerr
		}
		return old, bad, fmt.Errorf("%w; the last good list %s (%d servers) stands", rerr, copyPath, len(old)), nil
	}
	if hasCopy {
		lost := lostServers(old, servers)
		max := g.MaxShrink
		if max == 0 {
			max = DefaultMaxShrink
		}
		if float64(lost) > max*float64(len(old)) && !g.Accept {
			return old, bad, fmt.Errorf("%w: %s lists %d servers, %d of the %d of the last good list are gone (%.1f%%, more than %g%%): the last good list %s stands (plan -accept-shrink takes the new one)",
				ErrListShrank, path, len(servers), lost, len(old), 100*float64(lost)/float64(len(old)), 100*max, copyPath), nil
		}
	}
	if !g.ReadOnly {
		if werr := writeListCopy(copyPath, text, listCopyMeta{CRC32C: sum, Size: len(text), Servers: len(servers)}); werr != nil {
			stale = errors.Join(stale, werr)
		}
	}
	return servers, bad, stale, nil
}

// lostServers counts the servers of old that now is without.
func lostServers(old, now []data.Server) int {
	ids := make(map[string]struct{}, len(now))
	for _, s := range now {
		ids[s.ID] = struct{}{}
	}
	lost := 0
	for _, s := range old {
		if _, ok := ids[s.ID]; !ok {
			lost++
		}
	}
	return lost
}

// readListMeta reads what the last good copy at copyPath holds.
func readListMeta(copyPath string) (listCopyMeta, bool) {
	var m listCopyMeta
	b, err := os.ReadFile(copyPath + ".json")
	if err != nil || json.Unmarshal(b, &m) != nil {
		return m, false
	}
	return m, true
}

// writeListCopy replaces the last good copy by text, then its description
// (a crash between the two leaves a description that does not match, and
// the next read compares the lists in full).
func writeListCopy(copyPath, text string, m listCopyMeta) error {
	if err := durable.WriteFileAtomic(copyPath, []byte(text), 0o644); err != nil {
		return fmt.Errorf("keep the last good ranked list: %w", err)
	}
	b, _ := json.Marshal(m)
	if err := durable.WriteFileAtomic(copyPath+".json", append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("keep the last good ranked list: %w", err)
	}
	return nil
}
