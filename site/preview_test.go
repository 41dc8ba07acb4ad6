package site

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPreviewWording reads the preview pages of the standard fixture as a
// reader would.
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
			if !strings.Contains(all["golf"], "No answered checks in these 90 days") || strings.Contains(all["alpha"], "No answered checks") {
				t.Error("never answered is not said on the page (golf), or said of a server that answered (alpha)")
			}
		}},
		{"svgs_scale_to_a_phone", func(t *testing.T) {
			if !strings.Contains(all["alpha"], "svg,img{max-width:100%;height:auto}") || !strings.Contains(all["alpha"], `viewBox="0 0 720 28"`) {
				t.Error("the strip does not scale down: no max-width for svg and img or no viewBox")
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
				if !strings.HasSuffix(row, "<td>unknown</td></tr>") {
					t.Errorf("index row of %s: %s", id, row)
				}
			}
			if !strings.Contains(all["echo"], "unknown: the check did not list them") {
				t.Error("echo's page shows a tool count its check did not learn")
			}
		}},
		{"one_status_column", func(t *testing.T) {
			if strings.Contains(all["index.html"], "<th>Label</th>") || strings.Contains(all["index.html"], `<span class="st failing">failing</span></td><td>failing`) {
				t.Error("index shows the status twice")
			}
		}},
		{"times_absolute_in_utc", func(t *testing.T) {
			tm := regexp.MustCompile(`<time datetime="(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z)">(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC</time>`)
			for name, p := range all {
				if strings.Contains(p, " ago") {
					t.Errorf("%s gives a relative time", name)
				}
				for _, m := range tm.FindAllStringSubmatch(p, -1) {
					if strings.Replace(m[1][:19], "T", " ", 1) != m[3] {
						t.Errorf("%s: %s says another time than its datetime", name, m[0])
					}
				}
			}
			if n := len(tm.FindAllString(all["alpha"], -1)); n < 50 {
				t.Errorf("alpha's page has %d <time> elements", n)
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
