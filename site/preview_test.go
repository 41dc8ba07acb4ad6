package site

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/site/pages"
	"plug.directory/prober/site/record"
)

// TestPreviewWording reads the preview pages of the standard fixture as a
// reader would: the state and why in one line at the top, the totals once
// and the list before any protocol facts.
func TestPreviewWording(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	f.MustPublish()
	page := func(rel string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(f.out, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	all := map[string]string{"index.html": page("index.html")}
	for _, s := range fixServers {
		all[s.ID] = page("servers/" + s.ID + ".html")
	}
	cases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"plurals_agree", func(t *testing.T) {
			bad := regexp.MustCompile(`\b(1 checks|1 counted checks|1 tools|1 servers|Last 0 checks|0 check\b)`)
			for name, p := range all {
				if m := bad.FindString(p); m != "" {
					t.Errorf("%s says %q", name, m)
				}
			}
			if !strings.Contains(all["foxtrot"], "(1 counted check)") || !strings.Contains(all["foxtrot"], "The last check</h2>") {
				t.Error("foxtrot: one check not said in the singular")
			}
		}},
		{"P4_paused_not_said_to_be_checked", func(t *testing.T) {
			p := all["foxtrot"]
			if strings.Contains(p, "checked hourly") || !strings.Contains(p, "not checked: checks paused at the owner's request") ||
				!strings.Contains(p, "none while paused") {
				t.Errorf("foxtrot's page does not say its checks are paused")
			}
		}},
		{"P4_paused_says_since_when_and_no_check_will_come", func(t *testing.T) {
			p := all["foxtrot"]
			if !strings.Contains(p, `<dt>Paused</dt><dd>since <time datetime="2026-12-02T12:00:00.000Z">`) || !strings.Contains(p, "no check will come until the owner asks again") {
				t.Errorf("foxtrot's page does not say since when it is paused and that no check will come")
			}
		}},
		{"strip_has_its_ends_and_the_period_uptime", func(t *testing.T) {
			for name, p := range all {
				if name == "index.html" {
					continue
				}
				if !regexp.MustCompile(`<p class="ends"><span>\d{4}-\d{2}-\d{2}</span><span>\d{4}-\d{2}-\d{2}, the day of (its last check|this page)</span></p>`).MatchString(p) ||
					!regexp.MustCompile(`<p>Uptime: 24 h [^;]+; 7 d [^;]+; 30 d [^;]+; 90 d [^<]+</p>`).MatchString(p) {
					t.Errorf("%s: the strip has no dated ends or no 24 h, 7 d, 30 d and 90 d uptime under it", name)
				}
			}
			// The series ends on the day of the last check (the same in a
			// rebuild), today for a server never checked.
			for name, ends := range map[string]string{
				"alpha":   `<span>2026-09-04</span><span>2026-12-02, the day of its last check</span>`,
				"foxtrot": `<span>2026-09-01</span><span>2026-11-29, the day of its last check</span>`,
				"golf":    `<span>2026-09-04</span><span>2026-12-02, the day of this page</span>`,
			} {
				if !strings.Contains(all[name], ends) {
					t.Errorf("%s: the strip's ends are not %s", name, ends)
				}
			}
			if !strings.Contains(all["golf"], "No check worked in these 90 days") || strings.Contains(all["alpha"], "No check worked") {
				t.Error("never worked is not said on the page (golf), or said of a server that worked (alpha)")
			}
		}},
		{"svgs_scale_to_a_phone", func(t *testing.T) {
			if !strings.Contains(page("site.css"), "svg,img{max-width:100%;height:auto}") || !strings.Contains(all["alpha"], `<link rel="stylesheet" href="../site.css">`) ||
				!strings.Contains(all["alpha"], `<img src="../badges-strip/alpha.svg" width="720" height="48"`) || !strings.Contains(all["alpha"], `<svg class="latency-chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 404 112"`) {
				t.Error("the strip or the chart does not scale down: no max-width for svg and img, no size for the strip's image or no viewBox for the chart")
			}
		}},
		{"no_address_has_no_next_check", func(t *testing.T) {
			p := all["delta"]
			if strings.Contains(p, "(estimated)") || !strings.Contains(p, "<dt>Next check</dt><dd>none: no check can reach it (no address)") {
				t.Errorf("delta, listed without an address, is said to have a next check")
			}
		}},
		{"pending_said_not_checked_yet", func(t *testing.T) {
			p := all["golf"]
			if strings.Contains(p, ">never<") || !strings.Contains(p, "<dt>Last check</dt><dd>not checked yet") || !strings.Contains(p, "<p>Not checked yet.</p>") {
				t.Errorf("golf's page does not say it was not checked yet")
			}
		}},
		{"unknown_tool_count_is_unknown", func(t *testing.T) {
			idx := all["index.html"]
			for _, id := range []string{"golf", "echo", "bravo"} { // never checked, failing, needs a key
				row := regexp.MustCompile(`<a href="servers/` + id + `\.html">.*</tr>`).FindString(idx)
				if !strings.Contains(row, `<td data-label="Tools">unknown</td>`) {
					t.Errorf("index row of %s: %s", id, row)
				}
			}
			if !strings.Contains(all["echo"], "unknown: the check did not list them") {
				t.Error("echo's page shows a tool count its check did not learn")
			}
		}},
		{"last_checks_in_the_page_all_in_the_file", func(t *testing.T) {
			// alpha's file has its HistoryLen last checks; its page the
			// last RecentChecks of them, and says where the rest are.
			p := all["alpha"]
			i := strings.Index(p, fmt.Sprintf("<h2>The last %d checks</h2>", pages.RecentChecks))
			j := strings.Index(p, "<h2>Status changes</h2>")
			if i < 0 || j < i {
				t.Fatalf("alpha's page has no heading for its last %d checks", pages.RecentChecks)
			}
			if n := strings.Count(p[i:j], "<tr><td><time"); n != pages.RecentChecks {
				t.Errorf("alpha's page lists %d checks, want %d", n, pages.RecentChecks)
			}
			if !strings.Contains(p[i:j], `<p>Its file (<a href="alpha.json">alpha.json</a>) lists the last 48.</p>`) {
				t.Errorf("alpha's page does not say its file lists its last %d checks", record.HistoryLen)
			}
			if strings.Contains(all["bravo"], "lists the last") {
				t.Error("bravo's page, with its one check, sends to its file for more")
			}
		}},
		{"last_status_changes_in_the_page_all_in_the_file_and_feed", func(t *testing.T) {
			// alpha has 5 status changes: its page lists the last
			// RecentChanges and says where the others are; its file and
			// its feed have the 5. charlie's 2 are all in its page.
			for id, n := range map[string]int{"alpha": 5, "charlie": 2} {
				p := all[id]
				i, j := strings.Index(p, "<h2>Status changes</h2>"), strings.Index(p, "<h2>For developers</h2>")
				if i < 0 || j < i {
					t.Fatalf("%s's page has no status changes before its facts for developers", id)
				}
				shown := min(n, pages.RecentChanges)
				if got := strings.Count(p[i:j], "<tr><td><span class=\"st "); got != shown {
					t.Errorf("%s's page lists %d status changes, want %d", id, got, shown)
				}
				more := fmt.Sprintf(`<p>The last %d of %d: its file (<a href="%s.json">%s.json</a>) lists them all, its <a href="../feeds/%s.atom">Atom feed</a> the latest.`, shown, n, id, id, id)
				if got := strings.Contains(p[i:j], more); got != (n > shown) {
					t.Errorf("%s's page says where its other status changes are: %v, want %v (%s)", id, got, n > shown, more)
				}
				if sf := readServerFile(t, f, id); len(sf.Incidents) != n {
					t.Errorf("%s's file has %d status changes, want %d", id, len(sf.Incidents), n)
				}
				if got := strings.Count(page("feeds/"+id+".atom"), "<entry>"); got != n {
					t.Errorf("%s's feed has %d entries, want %d", id, got, n)
				}
			}
		}},
		{"one_status_column", func(t *testing.T) {
			if strings.Contains(all["index.html"], "<th>Label</th>") || strings.Contains(all["index.html"], `<span class="st failing">failing</span></td><td>failing`) {
				t.Error("index shows the status twice")
			}
		}},
		{"times_absolute_in_utc", func(t *testing.T) {
			tm := regexp.MustCompile(`<time datetime="(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z)">(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC</time>`)
			script := regexp.MustCompile(`(?s)<script>.*?</script>`)
			for name, p := range all {
				if strings.Contains(script.ReplaceAllString(p, ""), " ago") {
					t.Errorf("%s gives a relative time outside its script", name)
				}
				for _, m := range tm.FindAllStringSubmatch(p, -1) {
					if strings.Replace(m[1][:19], "T", " ", 1) != m[3] {
						t.Errorf("%s: %s says another time than its datetime", name, m[0])
					}
				}
			}
			// Its last RecentChecks checks, its status changes and its facts.
			if n := len(tm.FindAllString(all["alpha"], -1)); n < 2*pages.RecentChecks {
				t.Errorf("alpha's page has %d <time> elements", n)
			}
		}},
		{"state_and_why_in_one_line", func(t *testing.T) {
			for id, want := range map[string]string{
				"alpha":   `<span class="st working">working</span> It answered our last check, <time datetime="2026-12-02T11:00:17.000Z">2026-12-02 11:00:17 UTC</time>, in 1200 ms and listed 2 tools.</p>`,
				"bravo":   `<span class="st needs_key">needs a key</span> It answered our last check, <time datetime="2026-12-02T11:00:00.123Z">2026-12-02 11:00:00 UTC</time>, and asks for a key or a sign-in before it lists its tools (HTTP 401).</p>`,
				"charlie": `<span class="st refused">refused our check</span> It refused our last check, <time datetime="2026-12-02T11:00:00.000Z">2026-12-02 11:00:00 UTC</time> (HTTP 429). A server may limit automated checks: this does not count against it.</p>`,
				"delta":   `<span class="st not_checkable">not checkable by us</span> Our checks cannot reach it: no address. This does not count against it.</p>`,
				"echo":    `<span class="st failing">failing</span> Our last check, <time datetime="2026-12-02T11:15:00.000Z">2026-12-02 11:15:00 UTC</time>, failed: connection refused. Failing since <time datetime="2026-12-02T11:10:00.000Z">`,
				"foxtrot": `<span class="st paused">checks paused at the owner&#39;s request</span> Its owner asked us to stop checking it, and we have not since <time datetime="2026-12-02T12:00:00.000Z">`,
				"golf":    `<span class="st pending">not checked yet</span> Listed <time datetime="2026-12-02T11:58:00.000Z">2026-12-02 11:58:00 UTC</time>, not checked yet: its first check is planned for <time datetime="2026-12-02T12:02:00.000Z">`,
			} {
				if !strings.Contains(all[id], `<p class="state">`+want) {
					t.Errorf("%s's first line is not %s", id, want)
				}
			}
		}},
		{"needs_a_key_says_what_it_means", func(t *testing.T) {
			if !strings.Contains(all["bravo"], "It counts as working: it is up and answers. To use it you need a key or an account from its provider") {
				t.Error("bravo's page does not say what needing a key means")
			}
		}},
		{"uptime_once_and_one_last_check", func(t *testing.T) {
			for id, p := range all {
				if id == "index.html" {
					continue
				}
				if n := strings.Count(p, "Uptime:"); n != 1 || strings.Contains(p, "<dt>Uptime</dt>") || strings.Contains(p, "Last result") {
					t.Errorf("%s says its uptime %d times, or has a Last result beside its last checks", id, n)
				}
			}
		}},
		{"totals_once_and_no_jargon_before_the_list", func(t *testing.T) {
			idx := all["index.html"]
			if n := strings.Count(idx, "1 failing"); n != 1 || strings.Contains(idx, "failing: 1") {
				t.Errorf("the index says its totals %d times, or in a second form", n+strings.Count(idx, "failing: 1"))
			}
			list, jargon := strings.Index(idx, "<table"), strings.Index(idx, "negotiated")
			if list < 0 || jargon < list {
				t.Error("the index speaks of protocol versions before its list")
			}
		}},
		{"badge_snippet_for_the_owner", func(t *testing.T) {
			p := all["alpha"]
			for _, want := range []string{"badges/alpha.json", "badges-uptime/alpha.json", "badges-latency/alpha.json", "https://img.shields.io/endpoint?url="} {
				if !strings.Contains(p, want) {
					t.Errorf("alpha's page lacks %s in its README snippet", want)
				}
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, c.run)
	}
}

// TestLastWorkedLastAnswered: "last worked" is the last check that worked
// (working or needs a key); "last answered" the last check that got any
// answer, so a server that answered HTTP 500 in 3 ms answered, though it
// never worked. Neither repeats the last check of a server that
// works.
func TestLastWorkedLastAnswered(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	added := fixNow.Add(-48 * time.Hour)
	broken := data.Server{ID: "broken", Rank: 1, URL: "https://broken.example.com/mcp", Added: added}
	gone := data.Server{ID: "gone", Rank: 2, URL: "https://gone.example.com/mcp", Added: added}
	up := data.Server{ID: "up", Rank: 3, URL: "https://up.example.com/mcp", Added: added}
	f.writeServers([]data.Server{broken, gone, up})
	http500 := result(broken, fixNow.Add(-10*time.Minute), data.Failing, "HTTP 500")
	http500.Duration = 3 * time.Millisecond
	f.results(http500,
		result(gone, fixNow.Add(-25*time.Hour), data.Working, ""),
		result(gone, fixNow.Add(-20*time.Minute), data.Failing, "HTTP 503"),
		result(gone, fixNow.Add(-10*time.Minute), data.Failing, "connection refused"),
		result(up, fixNow.Add(-10*time.Minute), data.Working, ""))
	f.MustPublish()
	mustPagesSay(t, f, []pageSays{
		{"broken", []string{"<dt>Last worked</dt><dd>never</dd>", `<dt>Last answered</dt><dd><time datetime="2026-12-02T11:50:00.000Z">2026-12-02 11:50:00 UTC</time>, in 3 ms, HTTP 500</dd>`},
			[]string{"No answered checks", "answered checks"}},
		{"gone", []string{`<dt>Last worked</dt><dd><time datetime="2026-12-01T11:00:00.000Z">`, `<dt>Last answered</dt><dd><time datetime="2026-12-02T11:40:00.000Z">2026-12-02 11:40:00 UTC</time>, in 1200 ms</dd>`}, nil},
		{"up", nil, []string{"<dt>Last worked</dt>", "<dt>Last answered</dt>"}},
	})
}

// TestServerSaysOfItself: a server's own title, description and website
// head its page, escaped; a link that is not https, even one a
// journal of an older version kept, never becomes a link; where a server
// that needs a key says to get one is linked, never fetched.
func TestServerSaysOfItself(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	added := fixNow.Add(-48 * time.Hour)
	good := data.Server{ID: "good", Rank: 1, URL: "https://good.example.com/mcp", Added: added}
	evil := data.Server{ID: "evil", Rank: 2, URL: "https://evil.example.com/mcp", Added: added}
	locked := data.Server{ID: "locked", Rank: 3, URL: "https://locked.example.com/mcp", Added: added}
	f.writeServers([]data.Server{good, evil, locked})
	g := result(good, fixNow.Add(-10*time.Minute), data.Working, "")
	e := result(evil, fixNow.Add(-10*time.Minute), data.Working, "")
	e.ServerTitle, e.ServerDescription, e.ServerWebsite = `<script>alert(1)</script>`, `<img src=x onerror=alert(1)>`, "javascript:alert(1)"
	k := result(locked, fixNow.Add(-10*time.Minute), data.NeedsKey, "needs a key (OAuth)")
	k.KeyInfo = "http://locked.example.com/.well-known/oauth-protected-resource"
	f.results(g, e, k)
	f.MustPublish()
	mustPagesSay(t, f, []pageSays{
		{"good", []string{"<h1>The good server</h1>\n<p class=\"sub\">good</p>", `<p class="about">Searches and fetches good&#39;s documents.</p>`,
			`<dt>Website</dt><dd><a href="https://good.example.com/about" rel="nofollow">https://good.example.com/about</a></dd>`, "<title>The good server: working"}, nil},
		{"evil", []string{"<h1>&lt;script&gt;alert(1)&lt;/script&gt;</h1>", `<p class="about">&lt;img src=x onerror=alert(1)&gt;</p>`},
			[]string{"<script>alert", "<img src=x", "javascript:", "<dt>Website</dt>"}},
		{"locked", nil, []string{"http://locked.example.com", "its OAuth metadata"}},
	})
}

// pageSays is what a server's page must say, and must not.
type pageSays struct {
	id        string
	want, not []string
}

// mustPagesSay fails t where a server's page that f published lacks a
// text it must say or has one it must not.
func mustPagesSay(t *testing.T, f *fixture, cases []pageSays) {
	t.Helper()
	for _, c := range cases {
		b, err := os.ReadFile(filepath.Join(f.out, "servers", c.id+".html"))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s's page lacks %s", c.id, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(string(b), n) {
				t.Errorf("%s's page has %s", c.id, n)
			}
		}
	}
}
