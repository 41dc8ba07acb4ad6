package site

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/site/badge"
	"plug.directory/prober/site/record"
	"plug.directory/prober/site/strip"
)

// TestPublishListedNotCheckable: a server listed without an address, or
// with one that does not parse or is too long, is published not_checkable
// with its reason from the first publish that lists it, never "not checked
// yet" nor dropped; duplicate ids keep the first row.
func TestPublishListedNotCheckable(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	list := "id,rank,url,added\n" +
		"alpha,1,https://alpha.example.com/mcp,2026-01-01T00:00:00Z\n" +
		"local,2,,2026-01-01T00:00:00Z\n" +
		"long,3,https://a.example.com/" + strings.Repeat("a", 200_000) + ",2026-01-01T00:00:00Z\n" +
		"bad,4,https://%zz/,2026-01-01T00:00:00Z\n" +
		"alpha,5,https://other.example.com/mcp,2026-01-01T00:00:00Z\n"
	f.writeFile(f.list, []byte(list))
	st := f.MustPublish()
	want := map[string][2]string{
		"alpha": {"pending", ""}, "local": {"not_checkable", data.DetailNoAddress},
		"long": {"not_checkable", data.DetailAddressTooLong}, "bad": {"not_checkable", data.DetailAddressUnparsable},
	}
	for id, w := range want {
		sf := readServerFile(t, f, id)
		if string(sf.Status) != w[0] || record.ValueOf(sf.Detail) != w[1] || sf.Label != sf.Status.Label() {
			t.Errorf("%s: status %q reason %q label %q, want %q %q", id, sf.Status, record.ValueOf(sf.Detail), sf.Label, w[0], w[1])
		}
	}
	if sf := readServerFile(t, f, "alpha"); sf.Rank != 1 || record.ValueOf(sf.URL) != "https://alpha.example.com/mcp" {
		t.Errorf("alpha: rank %d url %q, want the first row's", sf.Rank, record.ValueOf(sf.URL))
	}
	idx := readIndex(t, f)
	if len(idx.Rows) != 4 {
		t.Errorf("index has %d rows, want 4", len(idx.Rows))
	}
	for _, r := range idx.Rows {
		if w := want[r.ID]; string(r.Status) != w[0] {
			t.Errorf("index row %s: status %q, want %q", r.ID, r.Status, w[0])
		}
	}
	if idx.Servers != 4 {
		t.Errorf("index lists %d servers, want 4", idx.Servers)
	}
	var msgs []string
	for _, e := range st.Bad {
		msgs = append(msgs, strings.TrimPrefix(e.Error(), f.list))
	}
	if len(msgs) != 3 || !strings.HasPrefix(msgs[0], ":4: ") || !strings.HasPrefix(msgs[1], ":5: ") ||
		msgs[2] != `:6: duplicate id "alpha" (first on line 2, kept)` {
		t.Errorf("bad = %q, want lines 4, 5 and 6 named", msgs)
	}
	// The list unchanged, not read again, its bad rows
	// still count (prober_publish_bad_inputs does not drop to 0).
	f.now = f.now.Add(time.Minute)
	if st := f.MustPublish(); len(st.Bad) != 0 || st.ListBadUnread != 3 {
		t.Errorf("the list unchanged: %d bad, %d bad rows still in the list; want 0 and 3", len(st.Bad), st.ListBadUnread)
	}
}

// TestPublishListCutShort: a ranked list cut short, or gone, after plan
// took the whole one unpublishes nothing and stops no publish: publish
// holds it to the last good list plan keeps, as plan does, and names why
// the list was not taken.
func TestPublishListCutShort(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(f *fixture, whole []byte)
		want   string // in the error that names the list refused
	}{
		{"cut_short", func(f *fixture, whole []byte) { f.writeFile(f.list, whole[:len(whole)/2]) }, lists.ErrListShrank.Error()},
		{"gone", func(f *fixture, _ []byte) {
			if err := os.Remove(f.list); err != nil {
				t.Fatal(err)
			}
		}, "no such file or directory (the ranked list goes there: CSV id,rank,url,added); the last good list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newStandard(t)
			if _, _, _, err := (lists.ListGuard{Dir: f.dir}).Read(f.list); err != nil { // as plan does
				t.Fatal(err)
			}
			f.MustPublish()
			whole, err := os.ReadFile(f.list)
			if err != nil {
				t.Fatal(err)
			}
			tc.change(f, whole)
			st := f.MustPublish()
			for _, s := range fixServers {
				if _, err := os.Stat(filepath.Join(f.out, "servers", s.ID+".json")); err != nil {
					t.Errorf("%s unpublished: %v", s.ID, err)
				}
			}
			found := false
			for _, e := range st.Bad {
				found = found || strings.Contains(e.Error(), tc.want)
			}
			if !found {
				t.Errorf("bad = %v, want the refusal named: %q", st.Bad, tc.want)
			}
		})
	}
}

// TestPublishPausedListRefused: a local paused list that no longer parses
// resumes nothing on the site, also in a rebuild that has no published
// pauses to keep: the last good copy plan kept stands (rules R2, P4).
func TestPublishPausedListRefused(t *testing.T) {
	t.Parallel()
	f := newStandard(t)                                                                     // foxtrot paused
	if _, stale, err := lists.LoadPausedList(f.dir, f.paused); err != nil || stale != nil { // as plan does
		t.Fatal(err, stale)
	}
	f.MustPublish()
	f.writePaused("foxtrot golf\n")             // a line that does not parse: refused whole
	if err := os.RemoveAll(f.out); err != nil { // a rebuild: nothing published to keep
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(f.dir, "site")); err != nil {
		t.Fatal(err)
	}
	st := f.MustPublish()
	if sf := readServerFile(t, f, "foxtrot"); sf.Status != data.Paused || sf.Label != "checks paused at the owner's request" {
		t.Errorf("foxtrot: %s %q after the paused list was refused, want still paused (R2, P4)", sf.Status, sf.Label)
	}
	if sf := readServerFile(t, f, "golf"); sf.Status == data.Paused {
		t.Errorf("golf paused by a line that was refused")
	}
	named := false
	for _, e := range st.Bad {
		named = named || strings.Contains(e.Error(), f.paused+":1")
	}
	if !named {
		t.Errorf("bad = %v, want the paused list's line 1 named", st.Bad)
	}
}

// TestPublishReturningServer: a server that leaves the ranked list loses its
// public files, and when it returns its page is the same server's, with its
// history, uptime and incidents, not a new one, its older checks kept in
// either layout. Records kept for a return are pruned after retiredKeep
// months.
func TestPublishReturningServer(t *testing.T) {
	t.Parallel()
	for _, layoutBefore := range []bool{false, true} {
		t.Run(fmt.Sprintf("older_checks_as_json=%v", layoutBefore), func(t *testing.T) {
			t.Parallel()
			returningServer(t, layoutBefore)
		})
	}
}

func returningServer(t *testing.T, layoutBefore bool) {
	f := newStandard(t)
	f.MustPublish()
	if layoutBefore {
		toLayoutBefore(t, f, "alpha")
	}
	before := readServerFile(t, f, "alpha")
	if len(before.History) == 0 {
		t.Fatal("alpha has no history to keep")
	}
	var rest []data.Server
	for _, s := range fixServers {
		if s.ID != "alpha" {
			rest = append(rest, s)
		}
	}
	f.writeServers(rest)
	if _, _, _, err := (lists.ListGuard{Dir: f.dir, Accept: true}).Read(f.list); err != nil { // plan takes the shorter list
		t.Fatal(err)
	}
	f.MustPublish()
	if _, err := os.Stat(filepath.Join(f.out, "servers", "alpha.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("alpha's file after it left the list: %v, want it gone", err)
	}
	f.writeServers(fixServers)
	f.MustPublish()
	after := readServerFile(t, f, "alpha")
	if after.Status != before.Status || len(after.History) != len(before.History) || len(after.Incidents) != len(before.Incidents) ||
		after.FailingSince != before.FailingSince || !reflect.DeepEqual(after.Uptime, before.Uptime) {
		t.Errorf("alpha back on the list: status %s, %d checks, %d incidents, uptime %+v; want %s, %d, %d, %+v as before it left",
			after.Status, len(after.History), len(after.Incidents), after.Uptime, before.Status, len(before.History), len(before.Incidents), before.Uptime)
	}
	// Gone for longer than retiredKeep: pruned, and a return is a new server.
	f.writeServers(rest)
	f.MustPublish()
	f.now = f.now.AddDate(0, retiredKeep+1, 0)
	f.MustPublish()
	if months, _ := os.ReadDir(retiredDir(f.dir)); len(months) != 0 {
		t.Errorf("retired records %v kept past %d months", months, retiredKeep)
	}
}

// TestPublishReturningServerFlushFails: a publish that brings a server back
// on the list and fails at its flush (a full disk; a kill before it does
// the same) leaves the record kept from before it left, so that the next
// publish brings the server back with its history. Its published file is
// only in place after the flush: had the kept record gone as it was read,
// the server would come back as a new one.
func TestPublishReturningServerFlushFails(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	f.MustPublish()
	before := readServerFile(t, f, "alpha")
	var rest []data.Server
	for _, s := range fixServers {
		if s.ID != "alpha" {
			rest = append(rest, s)
		}
	}
	f.writeServers(rest)
	f.MustPublish()
	f.writeServers(fixServers)
	full := errors.New("no space left on device")
	cfg := f.config()
	(&flushCounter{fail: full}).install(&cfg)
	if _, err := Publish(context.Background(), cfg); !errors.Is(err, full) {
		t.Fatalf("publish with a failing flush: %v, want %v", err, full)
	}
	if _, err := os.Stat(filepath.Join(f.out, "servers", "alpha.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("alpha's file after a failed flush: %v, want none yet", err)
	}
	f.MustPublish()
	after := readServerFile(t, f, "alpha")
	if len(after.History) != len(before.History) || len(after.Incidents) != len(before.Incidents) || after.Status != before.Status {
		t.Errorf("alpha back after a failed flush: status %s, %d checks, %d incidents; want %s, %d, %d as before it left",
			after.Status, len(after.History), len(after.Incidents), before.Status, len(before.History), len(before.Incidents))
	}
}

// TestPublishReturningServerFiles: a server back on the list gets every
// public file again in the publish that brings it back (its badges and
// feed too, though its record from before it left shows the same badges
// and incidents), as a full rebuild would write them.
func TestPublishReturningServerFiles(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	f.MustPublish()
	var rest []data.Server
	for _, s := range fixServers {
		if s.ID != "alpha" {
			rest = append(rest, s)
		}
	}
	var files []string
	for _, dir := range badge.Dirs {
		files = append(files, filepath.Join(dir, "alpha.json"))
	}
	files = append(files, filepath.Join("feeds", "alpha.atom"), filepath.Join(strip.Dir, "alpha.svg"), filepath.Join("servers", "alpha.json"))
	published := map[string][]byte{}
	for _, rel := range files {
		b, err := os.ReadFile(filepath.Join(f.out, rel))
		if err != nil {
			t.Fatalf("before alpha left: %v", err)
		}
		published[rel] = b
	}
	f.writeServers(rest)
	f.MustPublish()
	f.writeServers(fixServers)
	f.MustPublish()
	for _, rel := range files {
		b, err := os.ReadFile(filepath.Join(f.out, rel))
		if err != nil {
			t.Errorf("alpha back on the list: %v", err)
		} else if rel != filepath.Join("servers", "alpha.json") && !bytes.Equal(b, published[rel]) {
			t.Errorf("alpha back on the list: %s differs from before it left:\n%s\nwant\n%s", rel, b, published[rel])
		}
	}
}

// TestPublishRelistedDaysListed: a server removed from the ranked list and
// listed again has a later listed_at, and the days it was checked before
// were listed days all the same: its daily series says so (older than the
// checks kept, taken from the series published, as well as newer), its
// strip draws them with their checks, not as "not listed yet", and a
// rebuild from the history gives the same bytes.
func TestPublishRelistedDaysListed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv := data.Server{ID: "mike", Rank: 5, URL: "https://mike.example.com/mcp", Added: fixNow.AddDate(0, 0, -40)}
	other := data.Server{ID: "november", Rank: 6, URL: "https://november.example.com/mcp", Added: fixNow.AddDate(0, 0, -40)}
	f.writeServers([]data.Server{srv, other})
	var rs []data.Result
	for d := 35; d >= 10; d-- { // a check a day, then none
		rs = append(rs, result(srv, fixNow.AddDate(0, 0, -d), data.Working, ""))
	}
	f.results(rs...)
	f.fold()
	f.now = fixNow.AddDate(0, 0, -10).Add(time.Hour)
	f.MustPublish()
	f.writeServers([]data.Server{other}) // removed...
	if _, _, _, err := (lists.ListGuard{Dir: f.dir, Accept: true}).Read(f.list); err != nil {
		t.Fatal(err)
	}
	f.now = fixNow.AddDate(0, 0, -5)
	f.MustPublish()
	relisted := srv
	relisted.Added = fixNow.AddDate(0, 0, -1) // ...and listed again
	f.writeServers([]data.Server{relisted, other})
	f.now = fixNow
	f.MustPublish()

	sf := readServerFile(t, f, "mike")
	svg, err := os.ReadFile(filepath.Join(f.out, strip.Dir, "mike.svg"))
	if err != nil {
		t.Fatal(err)
	}
	bars := dayBars(t, pathsOf(mustSVGElements(t, svg)), len(sf.Daily))
	checked := 0
	for i, d := range sf.Daily {
		if d.Counted > 0 {
			checked++
		}
		if want := d.Counted > 0; d.Listed != want {
			t.Errorf("%s: listed %v with %d counted checks, want %v (listed_at %v)", d.Date, d.Listed, d.Counted, want, sf.Listed)
		}
		if d.Counted > 0 && bars[i].Class != "day working" {
			t.Errorf("%s: a day with checks drawn %q", d.Date, bars[i].Class)
		}
	}
	if checked != 26 || sf.Listed == nil || !sf.Listed.Equal(relisted.Added) {
		t.Errorf("%d days with checks, listed_at %v; want 26, %v", checked, sf.Listed, relisted.Added)
	}
	incremental := map[string][]byte{}
	for _, rel := range []string{"servers/mike.json", strip.Dir + "/mike.svg"} {
		incremental[rel], _ = os.ReadFile(filepath.Join(f.out, rel))
	}
	if err := os.RemoveAll(f.out); err != nil {
		t.Fatal(err)
	}
	if st := f.MustPublish(); !st.Rebuilt {
		t.Fatal("not a rebuild")
	}
	for rel, want := range incremental {
		if got, _ := os.ReadFile(filepath.Join(f.out, rel)); !bytes.Equal(got, want) {
			t.Errorf("%s differs after a rebuild", rel)
		}
	}
}
