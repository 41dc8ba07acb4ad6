package site

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/internal/testutil"
	"plug.directory/prober/site/feed"
	"plug.directory/prober/site/record"
)

// atomDoc is an Atom document (its people and links read into the
// feed writer's own Person and Link) as RFC 4287 requires it, read generously so
// that validateAtom can say what is missing.
type atomDoc struct {
	XMLName xml.Name      `xml:"feed"`
	ID      string        `xml:"id"`
	Title   string        `xml:"title"`
	Updated string        `xml:"updated"`
	Authors []feed.Person `xml:"author"`
	Links   []feed.Link   `xml:"link"`
	Entries []struct {
		ID      string        `xml:"id"`
		Title   string        `xml:"title"`
		Updated string        `xml:"updated"`
		Authors []feed.Person `xml:"author"`
		Links   []feed.Link   `xml:"link"`
		Summary string        `xml:"summary"`
	} `xml:"entry"`
}

// validateAtom checks RFC 4287's required elements (4.1.1: a feed has one
// id, title and updated, and an author unless every entry has one; 4.1.2:
// an entry has one id, title and updated, and an alternate link when it
// has no content), that ids are IRIs and unique, and that times are RFC
// 3339. It returns the entry ids.
func validateAtom(t *testing.T, name string, b []byte) []string {
	t.Helper()
	var d atomDoc
	if err := xml.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: not XML: %v", name, err)
	}
	if d.XMLName.Space != "http://www.w3.org/2005/Atom" {
		t.Errorf("%s: root in namespace %q", name, d.XMLName.Space)
	}
	iri := func(what, id string) {
		if !strings.HasPrefix(id, "tag:") && !strings.HasPrefix(id, "https:") {
			t.Errorf("%s: %s %q is not an IRI", name, what, id)
		}
	}
	when := func(what, s string) {
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			t.Errorf("%s: %s %q is not RFC 3339", name, what, s)
		}
	}
	iri("feed id", d.ID)
	when("feed updated", d.Updated)
	if d.Title == "" {
		t.Errorf("%s: feed without a title", name)
	}
	feedAuthor := len(d.Authors) == 1 && d.Authors[0].Name != ""
	seen := map[string]bool{}
	var ids []string
	for _, e := range d.Entries {
		iri("entry id", e.ID)
		when("entry updated", e.Updated)
		if seen[e.ID] {
			t.Errorf("%s: entry id %s twice", name, e.ID)
		}
		seen[e.ID] = true
		ids = append(ids, e.ID)
		if e.Title == "" {
			t.Errorf("%s: entry %s without a title", name, e.ID)
		}
		if !feedAuthor && (len(e.Authors) == 0 || e.Authors[0].Name == "") {
			t.Errorf("%s: entry %s without an author, and the feed has none", name, e.ID)
		}
		alt := false
		for _, l := range e.Links {
			alt = alt || (l.Rel == "alternate" || l.Rel == "") && strings.HasPrefix(l.Href, record.SiteURL+"/servers/")
		}
		if !alt {
			t.Errorf("%s: entry %s without a link to the server's page", name, e.ID)
		}
		if e.Updated > d.Updated {
			t.Errorf("%s: entry %s updated after its feed", name, e.ID)
		}
	}
	return ids
}

func TestFeeds(t *testing.T) {
	t.Parallel()
	f := story(t)
	f.standard()
	f.writeServers(append(slices.Clone(fixServers), storyServer))
	f.MustPublish()
	feeds := func() map[string][]string {
		out := map[string][]string{}
		for rel, b := range testutil.MustTree(t, f.out) {
			if strings.HasSuffix(rel, ".atom") {
				out[rel] = validateAtom(t, rel, b)
			}
		}
		return out
	}
	before := feeds()
	t.Run("RFC4287_required_elements", func(t *testing.T) {
		if len(before["feed.atom"]) == 0 || len(before["feeds/hotel.atom"]) != 6 || len(before["feeds/golf.atom"]) != 0 {
			t.Errorf("entries: directory %d, hotel %d, golf %d; want some, 6, 0",
				len(before["feed.atom"]), len(before["feeds/hotel.atom"]), len(before["feeds/golf.atom"]))
		}
		if got := before["feeds/hotel.atom"][0]; got != "tag:plug.directory,2026:server/hotel/2026-11-29T03:00:00.000Z" {
			t.Errorf("newest entry of hotel: %s", got)
		}
	})
	t.Run("ids_stable_across_a_rebuild", func(t *testing.T) {
		for _, dir := range []string{filepath.Join(f.dir, "site"), f.out} {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
		}
		f.MustPublish()
		after := feeds()
		for rel, ids := range before {
			if strings.Join(after[rel], " ") != strings.Join(ids, " ") {
				t.Errorf("%s: ids after a rebuild\n%v\nwant\n%v", rel, after[rel], ids)
			}
		}
	})
}

// TestPublishFeedRecordDamaged: the directory feed's record
// (DATA/site/feed.json, its newest entries, merged with the changes of
// the servers each publish renders) deleted, cut short or changed so that
// it still reads: the next publish names it, takes the entries again from
// the servers' files, and writes feed.atom and the record as a site where
// nothing was damaged has them. Before, the feed kept only the entries of
// the servers that publish rendered.
func TestPublishFeedRecordDamaged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, path string)
		want   string // in the error Stats.Bad gives
	}{
		{"deleted", func(t *testing.T, path string) { mustRemove(t, path) }, "feed.json is missing"},
		{"cut_short", func(t *testing.T, path string) { cutShort(t, path) }, "feed.json: not the bytes written"},
		{"still_json", func(t *testing.T, path string) { edit(t, path, `"at":17`, `"at":18`) }, "not the bytes written"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, ctl := newStandard(t), newStandard(t) // ctl: nothing damaged
			f.MustPublish()
			ctl.MustPublish()
			if n := strings.Count(mustRead(t, filepath.Join(f.out, "feed.atom")), "<entry>"); n < 3 {
				t.Fatalf("the fixture's feed has %d entries: the test needs some", n)
			}
			tc.damage(t, feedPath(f.dir))
			f.now, ctl.now = f.now.Add(time.Minute), ctl.now.Add(time.Minute)
			st := f.MustPublish()
			ctl.MustPublish()
			var named bool
			for _, b := range st.Bad {
				named = named || strings.Contains(b.Error(), tc.want)
			}
			if !named {
				t.Errorf("bad input %v, want the feed record named (%q)", st.Bad, tc.want)
			}
			for _, x := range []struct{ got, want string }{
				{filepath.Join(f.out, "feed.atom"), filepath.Join(ctl.out, "feed.atom")},
				{feedPath(f.dir), feedPath(ctl.dir)},
			} {
				if got, want := mustRead(t, x.got), mustRead(t, x.want); got != want {
					t.Errorf("%s after the record was damaged:\n%s\nwant\n%s", filepath.Base(x.got), got, want)
				}
			}
			f.now = f.now.Add(time.Minute)
			if st := f.MustPublish(); len(st.Bad) > 0 {
				t.Errorf("the publish after names bad input: %v", st.Bad)
			}
		})
	}
}
