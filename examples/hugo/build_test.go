package main

import (
	"bytes"
	"context"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/site"
)

// demoLike publishes, into a fresh directory, a site like the demo's: a
// server of every status of table O, paused and pending included, with a
// few hours of checks. It returns the published site's directory.
func demoLike(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	added := now.Add(-10 * 24 * time.Hour)
	srv := func(id string, rank int, url string) data.Server {
		return data.Server{ID: id, Rank: rank, URL: url, Added: added}
	}
	servers := []data.Server{
		srv("docs-13670", 1, "https://docs.demo.test:8443/mcp"),
		srv("crm-2292", 2, "https://crm.demo.test:8443/mcp"),
		srv("search-7114", 3, "https://search.demo.test:8443/mcp"),
		srv("reports-2994", 4, "https://reports.demo.test:8443/mcp"),
		srv("desktop-4048", 5, ""),
		srv("archive-2322", 6, "https://archive.demo.test:8443/mcp"),
		srv("fresh-2227", 7, "https://fresh.demo.test:8443/mcp"),
	}
	var list bytes.Buffer
	if err := lists.WriteServers(&list, servers); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"servers.csv": list.Bytes(), "paused.txt": []byte("archive-2322\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	j, err := spool.CreateJournal(filepath.Join(dir, "data"), "run-example")
	if err != nil {
		t.Fatal(err)
	}
	for h := 3; h >= 1; h-- {
		at := now.Add(-time.Duration(h) * time.Hour)
		for _, r := range []data.Result{
			{ID: "docs-13670", Status: data.Working, Detail: "2 tools", HTTPStatus: 200, Protocol: "2026-07-28", Transport: data.TransportStreamable,
				ServerName: "docs", ServerVersion: "1.0.0", ToolCount: 2, Tools: []string{"search_docs", "get_page"}, Duration: 49 * time.Millisecond},
			{ID: "crm-2292", Status: data.NeedsKey, Detail: "needs a key (OAuth)", HTTPStatus: 401, Duration: 4 * time.Millisecond},
			{ID: "search-7114", Status: data.Refused, Detail: "refused: HTTP 429", HTTPStatus: 429, Duration: 5 * time.Millisecond},
			{ID: "reports-2994", Status: data.Failing, Detail: "no answer in 10 s", Duration: 10004 * time.Millisecond},
			{ID: "desktop-4048", Status: data.NotCheckable, Detail: "no address"},
			{ID: "archive-2322", Status: data.Working, Detail: "1 tool", HTTPStatus: 200, ToolCount: 1, Tools: []string{"read"}, Duration: 30 * time.Millisecond},
		} {
			for _, s := range servers {
				if s.ID == r.ID {
					r.URL, r.Host = s.URL, s.Host()
				}
			}
			r.Started, r.Planned = at, at
			r.Finished = at.Add(r.Duration)
			if err := j.Append(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "site")
	if _, err := site.Publish(context.Background(), site.Config{DataDir: filepath.Join(dir, "data"), ServersPath: filepath.Join(dir, "servers.csv"),
		PausedPath: filepath.Join(dir, "paused.txt"), OutDir: out, Now: func() time.Time { return now }, Contact: "probe@demo.test"}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHugoBuild: Hugo 0.111 (Debian's) builds the
// example site from a freshly published tree, and its index and each
// server's page say the server's name and status as its JSON has them,
// the templates holding no special case for any server or value; times
// and counts read as a site says them.
func TestHugoBuild(t *testing.T) {
	hugo, err := exec.LookPath("hugo")
	if err != nil {
		t.Skip("hugo not installed (make test installs Debian's as root with apt-get): the example site build is not checked")
	}
	pub := demoLike(t)
	out := filepath.Join(t.TempDir(), "built")
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"-site", pub, "-out", out, "-source", ".", "-hugo", hugo}, new(bytes.Buffer), &stderr); err != nil {
		t.Fatalf("build: %v\n%s", err, stderr.String())
	}
	read := func(rel string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		return html.UnescapeString(string(b))
	}
	index := read("index.html")
	rows, last := 0, -1
	for _, c := range []struct{ id, label, detail string }{
		{"docs-13670", "working", "2 tools"},
		{"crm-2292", "needs a key", "needs a key (OAuth)"},
		{"search-7114", "refused our check", "refused: HTTP 429"},
		{"reports-2994", "failing", "no answer in 10 s"},
		{"desktop-4048", "not checkable by us", "no address"},
		{"archive-2322", "checks paused at the owner's request", ""},
		{"fresh-2227", "not checked yet", ""},
	} {
		row := `<a href="./servers/` + c.id + `.html">` + c.id + `</a></td><td class="`
		// In rank order, as the cases are: the index's parts hold the
		// rows in id order, and the template sorts them.
		if i := strings.Index(index, row); i < 0 || !strings.Contains(index[i:min(len(index), i+len(row)+80)], ">"+c.label+"</td>") {
			t.Errorf("index.html: no row of %s saying %q", c.id, c.label)
		} else if i < last {
			t.Errorf("index.html: the row of %s comes before the one of a higher rank", c.id)
		} else {
			rows, last = rows+1, i
		}
		page := read("servers/" + c.id + ".html")
		want := c.label
		if c.detail != "" {
			want += ": " + c.detail
		}
		if !strings.Contains(page, "<h1>"+c.id+"</h1>") || !strings.Contains(page, want+"</p>") {
			t.Errorf("servers/%s.html does not say its name and %q:\n%s", c.id, want, page)
		}
	}
	if rows != 7 || !strings.Contains(index, "7 servers listed") {
		t.Errorf("index.html: %d rows found, want 7:\n%s", rows, index)
	}
	// Nulls and zeros read as what they mean, without a special case:
	// the timed-out check has no latency, the failing server 0 % uptime.
	reports := read("servers/reports-2994.html")
	for _, want := range []string{"no answer in 10 s, no answer", "24 h 0 %", "<dt>Median latency, 30 days</dt><dd>no answered check</dd>"} {
		if !strings.Contains(reports, want) {
			t.Errorf("servers/reports-2994.html does not say %q", want)
		}
	}
	if docs := read("servers/docs-13670.html"); !strings.Contains(docs, "HTTP 200, 49 ms, protocol 2026-07-28 (discover); the server says it is docs 1.0.0") {
		t.Errorf("servers/docs-13670.html: the last result is not told:\n%s", docs)
	}
	// Times and counts read as a site says them: no raw RFC
	// 3339 between tags (only in datetime), no "1 checks" or "1 servers".
	raw := regexp.MustCompile(`>[^<]*\d{4}-\d\d-\d\dT\d\d:\d\d`)
	plural := regexp.MustCompile(`\b1 (servers|checks)\b`)
	for _, rel := range []string{"index.html", "servers/docs-13670.html", "servers/archive-2322.html"} {
		p := read(rel)
		if m := raw.FindString(p); m != "" {
			t.Errorf("%s shows a raw time: %q", rel, m)
		}
		if m := plural.FindString(p); m != "" {
			t.Errorf("%s says %q", rel, m)
		}
	}
	for _, c := range []struct{ rel, want string }{
		{"index.html", `checks paused at the owner's request: 1 server;`},
		{"servers/docs-13670.html", `<time datetime="2026-12-02T11:00:00.000Z">2 Dec 2026, 11:00 UTC</time>`},
		// The daily series' columns add up to the checks of its 90 days.
		{"servers/docs-13670.html", "<h2>The last 90 days</h2>\n<p>3 counted checks, 3 worked.</p>"},
		{"servers/reports-2994.html", "<h2>The last 90 days</h2>\n<p>3 counted checks, 0 worked.</p>"},
		{"servers/fresh-2227.html", "<h2>The last 90 days</h2>\n<p>0 counted checks, 0 worked.</p>"},
		// The strip's snippet, made from its path: the file names the strip only.
		{"servers/docs-13670.html", "Embed it: <code>[![docs-13670: uptime per day](https://plug.directory/badges-strip/docs-13670.svg)](https://plug.directory/servers/docs-13670.html)</code>"},
		// The history's columns read as a row a check, newest first.
		{"servers/reports-2994.html", "<h2>The last 3 checks</h2>"},
		{"servers/reports-2994.html", "</td><td>failing: no answer in 10 s</td><td>no answer</td></tr>"},
		{"servers/docs-13670.html", "</td><td>working: 2 tools</td><td>49 ms</td></tr>"},
		{"servers/fresh-2227.html", "<h2>Checks</h2>"},
	} {
		if !strings.Contains(read(c.rel), c.want) {
			t.Errorf("%s does not say %s", c.rel, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "badges-strip", "docs-13670.svg")); err != nil {
		t.Errorf("the strip the page shows is not in the built site: %v", err)
	}
}
