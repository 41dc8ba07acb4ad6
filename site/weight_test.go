package site

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"plug.directory/prober/data"
	"plug.directory/prober/site/pages"
	"plug.directory/prober/site/record"
	"plug.directory/prober/site/strip"
)

// serverSet is every file of a server's set, relative to the top of the
// site: its file, page, strip, feed and four badges.
func serverSet(id string) []string {
	return []string{"servers/" + id + ".json", "servers/" + id + ".html", strip.Dir + "/" + id + ".svg", "feeds/" + id + ".atom",
		"badges/" + id + ".json", "badges-uptime/" + id + ".json", "badges-latency/" + id + ".json", "badges-certificate/" + id + ".json"}
}

// weigh returns the bytes of each of the files rels (relative to out),
// and their sum.
func weigh(tb testing.TB, out string, rels []string) (map[string]int64, int64) {
	tb.Helper()
	sizes := map[string]int64{}
	var sum int64
	for _, rel := range rels {
		fi, err := os.Stat(filepath.Join(out, filepath.FromSlash(rel)))
		if err != nil {
			tb.Fatal(err)
		}
		sizes[rel] = fi.Size()
		sum += fi.Size()
	}
	return sizes, sum
}

// ninetyDays publishes alpha checked every day for DailyLen days, as a
// server past the top 2,000 is: working but for a failing check a month,
// its time to answer varying.
func ninetyDays(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	f.writeServers([]data.Server{srvWorking})
	var rs []data.Result
	for day := record.DailyLen - 1; day >= 0; day-- {
		at := fixNow.Truncate(24*time.Hour).AddDate(0, 0, -day).Add(7*time.Hour + 17*time.Second)
		o, why := data.Working, ""
		if day%30 == 5 {
			o, why = data.Failing, "HTTP 502"
		}
		r := result(srvWorking, at, o, why)
		r.Duration = time.Duration(300+7*day) * time.Millisecond
		rs = append(rs, r)
	}
	f.results(rs...)
	f.fold()
	f.MustPublish()
	return f
}

// hourlyFlaky publishes alpha checked every hour for DailyLen days, as a
// server of the top 2,000 is (rule S1), its time to answer and each phase
// changing from check to check, and on every other day one check failing
// at an hour of its own and repeated 5 minutes later (rule S6), working:
// 45 days some check failed, 90 status changes, every figure of its daily
// series different.
func hourlyFlaky(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	f.writeServers([]data.Server{srvWorking})
	var rs []data.Result
	first := fixNow.Truncate(24*time.Hour).AddDate(0, 0, -(record.DailyLen - 1))
	for at := first.Add(17 * time.Second); at.Before(fixNow); at = at.Add(time.Hour) {
		n := uint32(at.Sub(first) / time.Hour)
		day, hour := n/24, n%24
		started := at
		if day%2 == 0 && hour == (day*7)%24 {
			rs = append(rs, result(srvWorking, at, data.Failing, "HTTP 502"))
			started = at.Add(5 * time.Minute)
		}
		x := (n + 1) * 2654435761 // a figure of its own for each check
		ms := func(base, spread uint32, shift uint) time.Duration {
			return time.Duration(base+(x>>shift)%spread) * time.Millisecond
		}
		r := result(srvWorking, started, data.Working, "")
		r.Duration = ms(250, 900, 3)
		r.Timings = &data.Timings{DNS: fixDur(ms(2, 40, 5)), Connect: fixDur(ms(10, 60, 7)), TLS: fixDur(ms(20, 80, 9)),
			FirstByte: []time.Duration{ms(100, 300, 11), ms(100, 300, 13), ms(100, 300, 15)}}
		rs = append(rs, r)
	}
	f.results(rs...)
	f.fold()
	f.MustPublish()
	return f
}

// pageLoads returns the files of the site a browser fetches to show the
// page of server id (relative to the top of the site), besides the page:
// the sources of its images and scripts and its stylesheets, which load
// nothing more (an SVG shown as an image loads nothing). Nothing else it
// links (the server's file, its feed) is fetched to show it.
func pageLoads(t *testing.T, out, id string) []string {
	t.Helper()
	page := "servers/" + id + ".html"
	b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	var loads []string
	z := html.NewTokenizer(bytes.NewReader(b))
	for tt := z.Next(); tt != html.ErrorToken; tt = z.Next() {
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		attr := map[string]string{}
		for _, a := range tok.Attr {
			attr[a.Key] = a.Val
		}
		ref := ""
		switch {
		case tok.Data == "img" || tok.Data == "script":
			ref = attr["src"]
		case tok.Data == "link" && attr["rel"] != "alternate":
			ref = attr["href"]
		}
		if ref == "" || strings.HasPrefix(ref, "data:") {
			continue
		}
		if strings.Contains(ref, "://") {
			t.Errorf("%s loads %s from another site", page, ref)
			continue
		}
		rel := path.Join(path.Dir(page), ref)
		if path.Ext(rel) == ".css" { // what a stylesheet loads, this does not count
			css, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(rel)))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(css, []byte("url(")) || bytes.Contains(css, []byte("@import")) {
				t.Errorf("%s loads more files, which this does not count", rel)
			}
		}
		loads = append(loads, rel)
	}
	return loads
}

// TestServerPageWeight holds what a browser fetches to show a server's
// page to its budget of 15 KB: the page and the files it loads but those
// every page shares (pages.Assets: its stylesheet and script, fetched
// once for the site and cached), whatever the server's 90 days were. The
// shared files are held to 4 KB. A budget is in bytes of the files as
// published, before the compression a web server may add.
func TestServerPageWeight(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		f    func(t *testing.T) *fixture
		id   string
	}{
		// 8.8 KB: its page and its strip.
		{"checked_once", newStandard, srvKey.ID},
		// 10.9 KB.
		{"checked_daily_90_days", ninetyDays, srvWorking.ID},
		// 14.2 KB, where it was 18.2 with a row for each of its 45 runs
		// of days some check failed (pages.RecentBadRuns).
		{"checked_hourly_failing_every_other_day", hourlyFlaky, srvWorking.ID},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := c.f(t)
			f.MustPublish()
			sizes, all := weigh(t, f.out, append([]string{"servers/" + c.id + ".html"}, pageLoads(t, f.out, c.id)...))
			var shared int64
			for name := range pages.Assets {
				shared += sizes[name]
			}
			own := all - shared
			t.Logf("%s's page loads %d bytes of its own and %d shared: %v", c.id, own, shared, sizes)
			if own > 15<<10 {
				t.Errorf("%s's page loads %d bytes of its own, past its budget of 15 KB: %v", c.id, own, sizes)
			}
			if shared == 0 || shared > 4<<10 {
				t.Errorf("%s's page loads %d bytes of shared files, want some and at most 4 KB: %v", c.id, shared, sizes)
			}
		})
	}
}

// TestServerSetWeight holds what a server's set of files (its file, page,
// strip, feed and badges) weighs at today's content to its budget: a
// server checked once (the golden bravo) within 13 KB, one checked every
// day for 90 days within 24 KB, and one checked every hour for 90 days,
// failing on every other day, within 68 KB. docs/development.md
// ("What a site weighs") gives the figures; a set past its budget fails
// here, with what each file weighs.
func TestServerSetWeight(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		f      func(t *testing.T) *fixture
		id     string
		budget int64
	}{
		// 12.6 KB, where it was 14.3 (its page's strip an image of its
		// file, its file without its badges' snippets).
		{"checked_once", newStandard, srvKey.ID, 13 << 10},
		// 24.0 KB, where it was 35.8: its file's checks in columns (3.0
		// KB, where they were 6.7) and no badges' snippets; its page's
		// latency chart an area a phase (1.8 KB, where it was 5.8), its
		// strip an image of its file, its last 5 checks and 3 status
		// changes; its feed a line an entry. What is left past 15 KB is
		// most of all its daily series (4 KB of its 10 KB file) and what
		// its page says in words (docs/development.md).
		{"checked_daily_90_days", ninetyDays, srvWorking.ID, 24 << 10},
		// 66.9 KB: its file 24.2 KB (its daily series with every figure
		// different, 90 status changes) and its feed 28.2 KB (an entry a
		// status change, the last 100); its page and strip 14.2 KB.
		{"checked_hourly_failing_every_other_day", hourlyFlaky, srvWorking.ID, 68 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := c.f(t)
			f.MustPublish()
			sizes, sum := weigh(t, f.out, serverSet(c.id))
			t.Logf("%s: %d bytes: %v", c.id, sum, sizes)
			if sum > c.budget {
				t.Errorf("%s's set weighs %d bytes, past its budget of %d: %v", c.id, sum, c.budget, sizes)
			}
		})
	}
}

// TestPageListsLatestBadRuns: a server's page lists the latest
// pages.RecentBadRuns runs of days some check failed, oldest first, and
// says how many there were and where every day is; the strip's image text
// still counts every day.
func TestPageListsLatestBadRuns(t *testing.T) {
	t.Parallel()
	f := hourlyFlaky(t)
	sf := readServerFile(t, f, srvWorking.ID)
	runs := strip.BadDays(sf.Daily)
	if len(runs) != 45 {
		t.Fatalf("%d runs of days some check failed, want 45: %+v", len(runs), runs)
	}
	b, err := os.ReadFile(filepath.Join(f.out, "servers", srvWorking.ID+".html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	row := func(r strip.DayRun) string {
		return "<tr><td>" + r.From + "</td><td data-label=\"Checks\">25 counted checks, 24 worked</td>"
	}
	older := runs[:max(0, len(runs)-pages.RecentBadRuns)]
	shown := runs[len(older):]
	var at []int
	for _, r := range shown {
		at = append(at, strings.Index(page, row(r)))
	}
	for i, r := range shown {
		if at[i] < 0 || i > 0 && at[i] < at[i-1] {
			t.Errorf("run %d of the last %d (%s) not listed in order, at %v", i, len(shown), r.From, at)
		}
	}
	for _, r := range older {
		if strings.Contains(page, row(r)) {
			t.Errorf("the page lists %s, older than its last %d runs", r.From, pages.RecentBadRuns)
		}
	}
	if w := "<p>The days some check failed, the last 10 of 45 runs: its file (<a href=\"alpha.json\">alpha.json</a>) has every day.</p>"; !strings.Contains(page, w) {
		t.Errorf("the page does not say %s", w)
	}
	if w := "every check worked on 45 days, some failed on 45 days\">"; !strings.Contains(page, w) {
		t.Errorf("the strip's image text does not say %s", w)
	}
}
