package lists

import (
	"errors"
	"fmt"
	"strings"

	"plug.directory/prober/data"
)

// checkID returns why id cannot be a server's id, nil when it can. An id
// names the server's files on the site (servers/<id>.json and the like),
// so it is slash-separated segments of letters, digits, '.', '_', '-', '@'
// and '+', none empty or starting with a dot, none longer than
// data.MaxIDSegmentBytes, none ending in one of data.PublishedSuffixes
// (its directory could be another server's file) or holding the ".tmp-"
// of a temporary file (a rebuild would remove it as left by a crash). Ids
// that differ only in case are refused by parseServers: one file where
// case is ignored.
func checkID(id string) error {
	switch {
	case id == "":
		return errors.New("missing id")
	case len(id) > data.MaxIDBytes:
		return fmt.Errorf("id %.40q... of %d bytes, over the %d an id may take", id, len(id), data.MaxIDBytes)
	}
	for rest := id; ; {
		seg, more, found := strings.Cut(rest, "/")
		if err := checkSegment(seg); err != nil {
			return fmt.Errorf("id %.60q cannot name the site's files: %w", id, err)
		}
		if !found {
			return nil
		}
		rest = more
	}
}

// idByte tells the bytes an id's segments may hold.
var idByte = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._-@+", byte(c)) >= 0
	}
	return t
}()

// checkSegment returns why seg, a part of an id between slashes, cannot
// name a file or directory of the site.
func checkSegment(seg string) error {
	if seg == "" || seg[0] == '.' {
		return fmt.Errorf("part %q is empty or starts with a dot", seg)
	}
	dot := false
	for i := 0; i < len(seg); i++ {
		if !idByte[seg[i]] {
			return fmt.Errorf("part %q has %q in it: only letters, digits and . _ - @ + are allowed", seg, seg[i])
		}
		dot = dot || seg[i] == '.'
	}
	if len(seg) > data.MaxIDSegmentBytes {
		return fmt.Errorf("part %.20q... of %d bytes, over the %d a file name leaves", seg, len(seg), data.MaxIDSegmentBytes)
	}
	if !dot {
		return nil
	}
	lower := strings.ToLower(seg)
	for _, suf := range data.PublishedSuffixes {
		if strings.HasSuffix(lower, suf) {
			return fmt.Errorf("part %q ends in %q, as the site's files do", seg, suf)
		}
	}
	if strings.Contains(lower, ".tmp-") {
		return fmt.Errorf("part %q has \".tmp-\" in it, as the site's temporary files do", seg)
	}
	return nil
}

// foldID returns id as it names a file where case is ignored: ids are
// ASCII (checkID), so lowercase.
func foldID(id string) string { return strings.ToLower(id) }
