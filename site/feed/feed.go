// Package feed writes the Atom feeds of status changes, a server's
// (Server: its incidents and certificate warnings) and the directory's
// (Directory), from the record; the directory feed's entries are merged
// run to run (Merge), and the publish pass keeps them.
package feed

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/site/record"
)

// Lengths of the Atom feeds of status changes.
const (
	Len       = 300                    // entries of feed.atom, the whole directory's
	ServerLen = record.CertWarningsLen // entries of feeds/<id>.atom
)

// tagPrefix starts the id of every feed and entry (RFC 4151 tag URIs):
// an entry's id is made of the server id and the start of the change, so
// it is the same in every rebuild.
const tagPrefix = "tag:plug.directory,2026:"

// Entry is one status change in a feed, and in the directory feed's
// record (DATA/site/feed.json).
type Entry struct {
	ID     string       `json:"id"` // server id
	At     int64        `json:"at"` // start of the change, Unix ms
	Status data.Outcome `json:"status"`
	From   data.Outcome `json:"from"`
	Detail string       `json:"reason,omitempty"`
	// A certificate coming to its end (server feeds only): Kind
	// feedCertificate, the days it had left then, and its expiry (Unix
	// ms). Status and From are empty.
	Kind     string `json:"kind,omitempty"`
	Days     int    `json:"days,omitempty"`
	NotAfter int64  `json:"not_after,omitempty"`
}

// feedCertificate is the Kind of a certificate's feed entry.
const feedCertificate = "certificate"

// EntriesOf returns the newest n status changes of a server's
// incidents (newest first, as published).
func EntriesOf(id string, in []record.Incident, n int) []Entry {
	out := make([]Entry, 0, min(n, len(in)))
	for _, x := range in[:min(n, len(in))] {
		out = append(out, Entry{ID: id, At: x.Start.UnixMilli(), Status: x.Status, From: record.ValueOf(x.From), Detail: record.ValueOf(x.Detail)})
	}
	return out
}

// newer orders feed entries newest first, ties by server id.
func newer(a, b Entry) int {
	if c := cmp.Compare(b.At, a.At); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// atomFeed is an Atom feed (RFC 4287) with the elements it requires.
type atomFeed struct {
	XMLName xml.Name    `xml:"http://www.w3.org/2005/Atom feed"`
	ID      string      `xml:"id"`
	Title   string      `xml:"title"`
	Updated string      `xml:"updated"`
	Author  Person      `xml:"author"`
	Links   []Link      `xml:"link"`
	Entries []atomEntry `xml:"entry"`
}

type Person struct {
	Name string `xml:"name"`
	URI  string `xml:"uri,omitempty"`
}

type Link struct {
	Rel  string `xml:"rel,attr,omitempty"` // none: "alternate" (RFC 4287, 4.2.7.2)
	Href string `xml:"href,attr"`
	Type string `xml:"type,attr,omitempty"`
}

type atomEntry struct {
	ID      string `xml:"id"`
	Title   string `xml:"title"`
	Updated string `xml:"updated"`
	Link    Link   `xml:"link"`
	Summary string `xml:"summary"`
}

func atomTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// changeTitle says a change in a few words: "alpha: failing (HTTP 502)",
// "beta: needs a key (OAuth)", never the label twice.
func changeTitle(e Entry) string {
	if e.Kind == feedCertificate {
		return e.ID + ": certificate " + data.ExpiresIn(e.Days)
	}
	t := e.ID + ": " + e.Status.Label()
	if d := beyondLabel(e.Status, e.Detail); d != "" && e.Status != data.Working {
		t += " (" + d + ")"
	}
	return t
}

// beyondLabel is what a check's reason says that its status's label does
// not: the reason less a leading label ("needs a key (OAuth)" gives
// "OAuth") or status word ("refused: HTTP 429" gives "HTTP 429").
func beyondLabel(o data.Outcome, reason string) string {
	for _, prefix := range []string{o.Label(), strings.ReplaceAll(string(o), "_", " ") + ":"} {
		if rest, ok := strings.CutPrefix(reason, prefix); ok {
			reason = strings.TrimSpace(rest)
			break
		}
	}
	if strings.HasPrefix(reason, "(") && strings.HasSuffix(reason, ")") {
		reason = reason[1 : len(reason)-1]
	}
	return reason
}

// changeSummary says it in a sentence. A pause says that no check will
// come; a first status is the first check's, a pause before any check
// none.
func changeSummary(e Entry) string {
	if e.Kind == feedCertificate {
		return "The certificate of " + e.ID + " " + data.ExpiresIn(e.Days) + ", at " +
			time.UnixMilli(e.NotAfter).UTC().Format("2006-01-02 15:04:05 UTC") + "; once it has expired, every check fails (" + data.DetailCertExpired + ")."
	}
	at := time.UnixMilli(e.At).UTC().Format("2006-01-02 15:04:05 UTC")
	if e.Status == data.Paused {
		s := e.ID + ": checks paused at the owner's request from " + at
		if e.From != "" {
			s += " (it was " + e.From.Label() + ")"
		}
		return s + "; no check will come until the owner asks again."
	}
	s := e.ID + " was first checked: " + e.Status.Label()
	if e.From != "" {
		s = e.ID + " went from " + e.From.Label() + " to " + e.Status.Label()
	}
	if d := beyondLabel(e.Status, e.Detail); d != "" {
		s += ": " + d
	}
	return s + ", at " + at + "."
}

// encodeFeed renders an Atom feed of entries (newest first). Its updated
// time is the newest entry's, so that the same changes give the same
// bytes; a feed without entries says since, the time (Unix ms) what it
// follows began: the server's listing.
func encodeFeed(id, title, self, alternate string, since int64, entries []Entry) ([]byte, error) {
	f := atomFeed{ID: id, Title: title, Updated: atomTime(since),
		Author: Person{Name: "plug.directory prober", URI: record.SiteURL + "/probe"},
		Links:  []Link{{Rel: "self", Href: self, Type: "application/atom+xml"}, {Rel: "alternate", Href: alternate, Type: "text/html"}}}
	if len(entries) > 0 {
		f.Updated = atomTime(entries[0].At)
	}
	for _, e := range entries {
		kind := ""
		if e.Kind != "" {
			kind = e.Kind + "-" + strconv.Itoa(e.Days) + "d/"
		}
		f.Entries = append(f.Entries, atomEntry{
			ID: tagPrefix + "server/" + e.ID + "/" + kind + atomTime(e.At), Title: changeTitle(e), Updated: atomTime(e.At),
			Link: Link{Href: record.PageURL(e.ID)}, Summary: changeSummary(e),
		})
	}
	// An entry's link is its server's page, the alternate of a link
	// without rel: 31 bytes less an entry than with its rel and type
	// said. Not indented (20 bytes of spaces and newlines an entry): a
	// line an entry, a text's "<" being escaped.
	b, err := xml.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("encode feed %s: %w", id, err)
	}
	b = bytes.ReplaceAll(bytes.ReplaceAll(b, []byte("<entry>"), []byte("\n<entry>")), []byte("</feed>"), []byte("\n</feed>"))
	return append(append([]byte(xml.Header), b...), '\n'), nil
}

// Server renders feeds/<id>.atom from a server's published incidents
// and the warnings of its certificates.
func Server(f record.ServerFile) ([]byte, error) {
	var listed int64
	if f.Listed != nil {
		listed = f.Listed.UnixMilli()
	}
	es := append(EntriesOf(f.ID, f.Incidents, ServerLen), certEntries(f.ID, f.CertWarnings)...)
	slices.SortStableFunc(es, newer)
	return encodeFeed(tagPrefix+"server/"+f.ID, "plug.directory: status of "+f.ID, record.SiteURL+"/"+f.Badges.Feed,
		record.PageURL(f.ID), listed, es[:min(len(es), ServerLen)])
}

// Directory renders feed.atom from the newest changes of every server;
// without any, its updated time is now, the publication's.
func Directory(entries []Entry, now time.Time) ([]byte, error) {
	return encodeFeed(tagPrefix+"directory", "plug.directory: status changes", record.SiteURL+"/feed.atom", record.SiteURL+"/", now.UnixMilli(), entries)
}

// Merge returns the newest Len entries of old, without those of the
// servers in gone or in fresh, and of fresh: the servers rendered this run
// bring all their newest changes, replacing what the record said of them.
func Merge(old []Entry, fresh map[string][]Entry, gone map[string]bool) []Entry {
	out := make([]Entry, 0, len(old)+len(fresh))
	for _, e := range old {
		if _, ok := fresh[e.ID]; !ok && !gone[e.ID] {
			out = append(out, e)
		}
	}
	for _, es := range fresh {
		out = append(out, es...)
	}
	slices.SortFunc(out, newer)
	return out[:min(len(out), Len)]
}

// certEntries returns the server feed's entries of its certificates'
// warnings (newest first, as published).
func certEntries(id string, ws []record.CertWarning) []Entry {
	out := make([]Entry, 0, len(ws))
	for _, w := range ws {
		out = append(out, Entry{ID: id, At: w.At.UnixMilli(), Kind: feedCertificate, Days: w.DaysLeft, NotAfter: w.NotAfter.UnixMilli()})
	}
	return out
}
