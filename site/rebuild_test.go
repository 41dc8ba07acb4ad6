package site

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/internal/testutil"
)

// TestRebuildSameTree (docs/site-files.md: a rebuild gives the same files): a day of
// hourly publishes, with results read from journals not folded yet (at
// nanoseconds) and from Parquet, tool definitions that change, a server
// paused and resumed in the middle, and a full rebuild at the same time
// from the data directory alone give byte-identical trees: every published
// time at one precision, a pause's incident (and its feed entry's id) from
// the pause record, not from the time of the publish that rebuilds. The
// day crosses a midnight before which two servers are last checked,
// one whose certificate is within the warning and one whose certificate is
// not: nothing a file derives from the date goes stale in the incremental
// site. With -short it publishes 10 of the 24 hours, each change among
// them.
func TestRebuildSameTree(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	search := spool.ToolDef{Name: "search", Description: "search the docs"}
	fetch := spool.ToolDef{Name: "fetch", Description: "fetch a page"}
	hotel := data.Server{ID: "hotel", Rank: 8, URL: "https://hotel.example.com/mcp", Added: fixNow.AddDate(0, 0, -90)}
	india := data.Server{ID: "india", Rank: 9, URL: "https://india.example.com/mcp", Added: fixNow.AddDate(0, 0, -90)}
	certs := map[string]time.Time{
		hotel.ID: time.Date(2026, 12, 12, 19, 0, 0, 0, time.UTC), // 10 days left, 9 after midnight
		india.ID: time.Date(2027, 1, 11, 5, 0, 0, 0, time.UTC),   // 40 days left
	}
	f.writeServers(append(slices.Clone(fixServers), hotel, india))
	for h := range 24 {
		f.now = fixNow.Add(time.Duration(h)*time.Hour + 7*time.Second)
		at := f.now.Add(-5*time.Minute + 123456789*time.Nanosecond) // a run records nanoseconds
		// hotel and india are checked until 21:00 only: folded, and so
		// last rendered, then.
		if h < 9 {
			for _, srv := range []data.Server{hotel, india} {
				r := result(srv, at.Add(2*time.Second), data.Working, "")
				r.TLS.NotAfter = certs[srv.ID]
				f.results(r)
			}
		}
		defs := []spool.ToolDef{search, fetch}
		if h >= 12 {
			defs = defs[:1]
		}
		status := data.Working
		if h%5 == 3 {
			status = data.Failing
		}
		f.results(withTools(result(srvWorking, at, status, map[bool]string{true: "HTTP 502"}[status == data.Failing]), defs...),
			result(srvFailing, at.Add(time.Second), data.Failing, "connection refused"))
		switch h {
		case 4:
			f.writePaused("foxtrot\necho\n")
		case 9:
			f.writePaused("foxtrot\n")
		}
		if h%3 == 0 {
			f.fold() // the rest is read from the journals
		}
		if testing.Short() && h%3 != 0 && h != 4 && h != 23 {
			continue // -short publishes at a fold, the pause and the last hour; the full run every hour
		}
		f.MustPublish()
	}
	incremental := testutil.MustTree(t, f.out)
	for _, path := range []string{f.out, data.Dir(f.dir).SiteStore()} {
		if err := os.RemoveAll(path); err != nil {
			t.Fatal(err)
		}
	}
	if st := f.MustPublish(); !st.Rebuilt {
		t.Fatal("not a rebuild")
	}
	rebuilt := testutil.MustTree(t, f.out)
	for name, want := range incremental {
		got, ok := rebuilt[name]
		switch {
		case !ok:
			t.Errorf("%s: published incrementally, not by the rebuild", name)
		case !bytes.Equal(got, want):
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			t.Errorf("%s differs at byte %d:\nincremental …%s\n    rebuilt …%s", name, i, excerpt(want, i), excerpt(got, i))
		}
	}
	for name := range rebuilt {
		if _, ok := incremental[name]; !ok {
			t.Errorf("%s: published by the rebuild only", name)
		}
	}
	// The certificates after midnight: hotel's counted down, india's
	// beyond the warning and not derived from the date.
	if c := readServerFile(t, f, hotel.ID).Certificate; c == nil || c.DaysLeft == nil || *c.DaysLeft != 9 || c.Message != "expires in 9 days" {
		t.Errorf("hotel's certificate %+v, want 9 days left after midnight", c)
	}
	if c := readServerFile(t, f, india.ID).Certificate; c == nil || c.DaysLeft != nil || c.Message != "valid until 2027-01-11" {
		t.Errorf("india's certificate %+v, want valid until 2027-01-11", c)
	}
	// The pause of echo is in it, from 04:00:07 to 09:00:07.
	in := readServerFile(t, f, "echo").Incidents
	found := false
	for _, x := range in {
		if x.Status == data.Paused && x.Start.Equal(fixNow.Add(4*time.Hour+7*time.Second)) && x.End != nil && x.End.Equal(fixNow.Add(9*time.Hour+7*time.Second)) {
			found = true
		}
	}
	if !found {
		t.Errorf("echo incidents %+v: want its pause from 04:00:07 to 09:00:07", in)
	}
}

// excerpt returns up to 80 bytes of b around i.
func excerpt(b []byte, i int) string {
	lo, hi := max(i-40, 0), min(i+40, len(b))
	return string(b[lo:hi])
}

// TestPauseRecordTakesPublishedPauses: a server paused before the pause
// record existed is recorded from the start its published file shows, so
// that a later rebuild keeps it there.
func TestPauseRecordTakesPublishedPauses(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	f.MustPublish() // foxtrot paused at fixNow
	if err := os.Remove(data.Dir(f.dir).PauseRecord()); err != nil {
		t.Fatal(err) // as before the record existed
	}
	f.now = fixNow.Add(time.Hour)
	f.MustPublish()
	pauses, bad, err := lists.ReadPauseRecord(f.dir)
	if err != nil || len(bad) > 0 {
		t.Fatal(bad, err)
	}
	if got := pauses["foxtrot"]; len(got) != 1 || !got[0].Paused || !got[0].At.Equal(fixNow) {
		t.Errorf("foxtrot's record %+v, want paused at %v", got, fixNow)
	}
}

// TestPauseRecordDamagedLine: a line of the pause record that fails its
// checksum is named by one publish, not by every publish after: the
// record is kept aside in damaged/ and written again without it, and the
// server it was about, paused still, gets its pause back from its file,
// at the time it had.
func TestPauseRecordDamagedLine(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	f.MustPublish() // foxtrot paused at fixNow
	path := data.Dir(f.dir).PauseRecord()
	edit(t, path, `"paused":true`, `"pauzed":true`)
	damaged := mustRead(t, path)
	for m := 1; m <= 3; m++ {
		f.now = f.now.Add(time.Minute)
		st := f.MustPublish()
		if want := m == 1; (len(st.Bad) == 1 && strings.Contains(st.Bad[0].Error(), "pauses.jsonl:1: checksum mismatch")) != want || (!want && len(st.Bad) > 0) {
			t.Fatalf("publish %d names %v; want the damaged line named by the first publish alone", m, st.Bad)
		}
	}
	pauses, bad, err := lists.ReadPauseRecord(f.dir)
	if err != nil || len(bad) > 0 {
		t.Fatal(bad, err)
	}
	if got := pauses["foxtrot"]; len(got) != 1 || !got[0].Paused || !got[0].At.Equal(fixNow) {
		t.Errorf("foxtrot's record %+v, want paused at %v", got, fixNow)
	}
	aside, _ := filepath.Glob(filepath.Join(data.Dir(f.dir).Damaged(), "site", "pauses.jsonl.*"))
	if len(aside) != 1 || mustRead(t, aside[0]) != damaged {
		t.Errorf("kept aside: %v, want the damaged record once", aside)
	}
}
