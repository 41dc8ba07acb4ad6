package site

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/internal/testutil"
)

// month publishes a month of checks of a server of every status, as the
// prober would have recorded them: alpha working with a bad day, bravo
// needing a key, charlie refused now and then, echo failing since
// yesterday, foxtrot paused, golf new, delta without an address; and one
// listed with an id and an address too long for a line, never checked.
func month(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	f.writeServers(append(slices.Clone(fixServers), srvLongName))
	f.writePaused("foxtrot\n")
	var rs []data.Result
	for day := 30; day >= 0; day-- {
		for _, h := range []int{1, 7, 13, 19} {
			at := fixNow.Truncate(24*time.Hour).AddDate(0, 0, -day).Add(time.Duration(h)*time.Hour + 17*time.Second)
			if at.After(fixNow) {
				continue
			}
			add := func(s data.Server, o data.Outcome, why string, ms int) {
				r := result(s, at, o, why)
				r.Duration = time.Duration(ms) * time.Millisecond
				rs = append(rs, r)
			}
			alpha := data.Working
			if day == 12 && h < 13 {
				alpha = data.Failing
			}
			add(srvWorking, alpha, map[bool]string{true: "HTTP 502"}[alpha == data.Failing], 300+40*(day%5)+h*10)
			add(srvKey, data.NeedsKey, "HTTP 401", 150+day)
			if day%9 == 0 {
				add(srvRefused, data.Refused, "HTTP 429", 80)
			} else {
				add(srvRefused, data.Working, "", 900+100*(day%3))
			}
			if day == 0 {
				add(srvFailing, data.Failing, "connection refused", 3)
			} else {
				add(srvFailing, data.Working, "", 3500+200*(h%3))
			}
			if day > 3 {
				add(srvPaused, data.Working, "", 600)
			}
		}
	}
	f.results(rs...)
	f.fold()
	if err := spool.MarkMinuteRecorded(f.dir, fixNow.Add(-time.Minute)); err != nil { // the checks are running
		t.Fatal(err)
	}
	f.MustPublish()
	return f
}

// srvLongName has an id and an address with no place to break a line.
var srvLongName = data.Server{ID: "io.github.someone/" + strings.Repeat("x", 150), Rank: 8,
	URL: "https://" + strings.Repeat("y", 60) + ".example.com/" + strings.Repeat("z", 100), Added: fixNow.Add(-time.Hour)}

// TestPagesInBrowser lays out every page the publish of a month of every
// status writes (index, checks page, each server's page) in headless
// Chromium at 390 px (a phone) and 1280 px, and runs axe-core on each: no
// page is wider than the window, nothing ends past its edge or scrolls
// sideways inside it (the tool fingerprint wraps, the tables reflow), and
// axe-core finds nothing (WCAG 2.2 AA and its best practices: contrast,
// landmarks, regions, image sizes); and the same for the pages of a server
// checked hourly for 90 days. cmd/demo's TestDemo does the same on the
// pages of the demo fleet's publish.
func TestPagesInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Chromium and axe-core on every page (about 20 s): full mode only, make test runs it")
	}
	b := testutil.MustBrowser(t)
	axe := testutil.MustAxe(t)
	f := month(t)
	pages := testutil.CheckPages(t, b, axe, f.out)
	if len(pages) != 3+len(fixServers) {
		t.Errorf("checked %d pages, want the index, the checks page and %d servers' pages: %v", len(pages), 1+len(fixServers), pages)
	}
	// A server checked hourly for 90 days, a check failing on every other
	// day: its page lists the last of its 45 runs of failing days, and
	// draws a latency chart whose every figure differs from day to day.
	t.Run("checked_hourly_failing_every_other_day", func(t *testing.T) {
		if got := testutil.CheckPages(t, b, axe, hourlyFlaky(t).out); !slices.Contains(got, "servers/alpha.html") {
			t.Errorf("checked %v, not alpha's page", got)
		}
	})
	// The script adds the reader's time zone and how long ago to the
	// times at the top (the page says them in UTC without it).
	t.Run("times_in_the_readers_zone", func(t *testing.T) {
		if err := b.SetTimezone("Asia/Kolkata"); err != nil {
			t.Fatal(err)
		}
		if err := b.Open(filepath.Join(f.out, "servers", "alpha.html"), 390, 844); err != nil {
			t.Fatal(err)
		}
		var said []string
		if err := b.Eval(`[...document.querySelectorAll(".facts time + .local")].map(e => e.previousElementSibling.dateTime + " " + e.textContent)`, &said); err != nil {
			t.Fatal(err)
		}
		// alpha's last check, 2026-12-02 07:00:17 UTC, is 12:30 in India.
		want := regexp.MustCompile(`^2026-12-02T07:00:17.000Z  \(\d+ (s|min|h|d) ago; your time Dec 2, 12:30 PM GMT\+5:30\)$`)
		if len(said) == 0 || !want.MatchString(said[0]) {
			t.Errorf("the last check in the reader's zone: %q, want %s", said, want)
		}
	})
}

// TestPagesInLighthouse runs Lighthouse, as a phone, on the index and a
// working server's page of a month of every status, served over HTTPS on
// loopback: accessibility, best practices and SEO score 100 (a
// favicon's 404, a missing meta description and images without a size
// cost points).
func TestPagesInLighthouse(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Lighthouse twice (about 30 s): full mode only, make test runs it")
	}
	f := month(t)
	srv := testutil.ServePages(t, f.out)
	for _, page := range []string{"index.html", "servers/alpha.html"} {
		t.Run(page, func(t *testing.T) {
			r := testutil.Lighthouse(t, srv, page)
			for _, c := range []string{"accessibility", "best-practices", "seo"} {
				if s, ok := r.Scores[c]; !ok || s != 1 {
					t.Errorf("%s: %s scores %.0f, want 100; failed audits: %v", page, c, 100*s, r.Failed)
				}
			}
		})
	}
}
