package feed

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/site/record"
)

// TestFeedWords: a feed entry's title never says
// its label twice, a pause says that no check will come (not that the
// server "was first checked"), and a feed with no entries is dated from
// the server's listing, not 1970.
func TestFeedWords(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC).UnixMilli()
	tests := []struct {
		name           string
		e              Entry
		title, summary string
	}{
		{"needs_key_OAuth_once", Entry{ID: "a", At: at, Status: data.NeedsKey, From: data.Working, Detail: "needs a key (OAuth)"},
			"a: needs a key (OAuth)", "a went from working to needs a key: OAuth, at 2026-12-02 12:00:00 UTC."},
		{"refused_once", Entry{ID: "b", At: at, Status: data.Refused, Detail: "refused: HTTP 429"},
			"b: refused our check (HTTP 429)", "b was first checked: refused our check: HTTP 429, at 2026-12-02 12:00:00 UTC."},
		{"failing_reason", Entry{ID: "c", At: at, Status: data.Failing, From: data.Working, Detail: "HTTP 502"},
			"c: failing (HTTP 502)", "c went from working to failing: HTTP 502, at 2026-12-02 12:00:00 UTC."},
		{"working_no_reason", Entry{ID: "d", At: at, Status: data.Working, Detail: "2 tools"},
			"d: working", "d was first checked: working: 2 tools, at 2026-12-02 12:00:00 UTC."},
		{"paused_before_any_check", Entry{ID: "e", At: at, Status: data.Paused},
			"e: checks paused at the owner's request", "e: checks paused at the owner's request from 2026-12-02 12:00:00 UTC; no check will come until the owner asks again."},
		{"paused_after_working", Entry{ID: "f", At: at, Status: data.Paused, From: data.Working},
			"f: checks paused at the owner's request", "f: checks paused at the owner's request from 2026-12-02 12:00:00 UTC (it was working); no check will come until the owner asks again."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := changeTitle(tc.e); got != tc.title {
				t.Errorf("title %q; want %q", got, tc.title)
			}
			if got := changeSummary(tc.e); got != tc.summary {
				t.Errorf("summary %q; want %q", got, tc.summary)
			}
		})
	}
	t.Run("empty_feed_dated_from_listing", func(t *testing.T) {
		listed := time.Date(2026, 9, 3, 12, 0, 0, 0, time.UTC)
		b, err := Server(record.ServerFile{ID: "g", Listed: &record.Time{Time: listed}, Badges: record.BadgeLinks{Feed: "feeds/g.atom"}})
		if err != nil {
			t.Fatal(err)
		}
		var f atomFeed
		if err := xml.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		if f.Updated != "2026-09-03T12:00:00.000Z" || len(f.Entries) != 0 {
			t.Errorf("updated %q with %d entries; want the listing, 2026-09-03T12:00:00.000Z", f.Updated, len(f.Entries))
		}
	})
}

// TestFeedLines: a server's feed is a line an entry, not indented, and an
// entry's link, without rel or type, is its server's page (an Atom link
// without rel is the alternate).
func TestFeedLines(t *testing.T) {
	t.Parallel()
	at := record.Time{Time: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	working, failing := data.Working, data.Failing
	b, err := Server(record.ServerFile{ID: "h", Badges: record.BadgeLinks{Feed: "feeds/h.atom"}, Incidents: []record.Incident{
		{Status: data.Failing, From: &working, Start: at},
		{Status: data.Working, From: &failing, Start: record.Time{Time: at.Add(-time.Hour)}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[1], "<feed ") || !strings.HasPrefix(lines[2], "<entry>") || !strings.HasSuffix(lines[3], "</entry>") || lines[4] != "</feed>" {
		t.Errorf("feed of 2 entries in %d lines, want the header, the feed's own elements, a line an entry and </feed>:\n%s", len(lines), b)
	}
	var f atomFeed
	if err := xml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	for _, e := range f.Entries {
		if e.Link != (Link{Href: record.PageURL("h")}) {
			t.Errorf("entry %s: link %+v, want only the href of its page", e.ID, e.Link)
		}
	}
}
