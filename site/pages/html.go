// Package pages renders the HTML pages from the record, each filled by its
// template beside this file: a server's page (AppendServer, server.html.tmpl,
// with its strip and latency chart from site/strip), the index (Index,
// index.html.tmpl) and the checks page (Checks, checks.html.tmpl, from
// site/checks' text); base.html.tmpl is their head and stylesheet. A
// server's page, written every minute for each server checked, and the
// index's rows are written in Go (serverpage.go, indexrows.go), byte for
// byte as their templates write them: the templates stay the reference
// the tests hold the Go to, and write what the Go leaves to them.
package pages

import (
	"bytes"
	"cmp"
	"embed"
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"sync"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/site/checks"
	"plug.directory/prober/site/record"
	"plug.directory/prober/site/strip"
)

//go:embed *.html.tmpl
var htmlFiles embed.FS

// The pages' stylesheet and small script, each a file of its own at the
// top of the site (Assets), which every page links: a page does not
// carry them, and a publish writes them only when they change.
var (
	//go:embed site.css
	siteCSS []byte
	//go:embed site.js
	siteJS []byte
)

// Assets are the files every page links, by name at the top of the
// site.
var Assets = map[string][]byte{"site.css": siteCSS, "site.js": siteJS}

var htmlFuncs = template.FuncMap{
	"pausedSince":   pausedSince,
	"periodUptime":  record.PeriodUptime,
	"lastIndex":     func(days []record.Day) int { return len(days) - 1 },
	"label":         func(o data.Outcome) string { return o.Label() },
	"when":          whenHTML,
	"at":            timeHTML,
	"percent":       percentText,
	"duration":      durationText,
	"seconds":       secondsText,
	"uptime":        uptimeText,
	"plural":        data.Plural,
	"str":           record.ValueOf[string],
	"ms":            msText,
	"stripSummary":  strip.Summary,
	"stripDays":     strip.DaysSummary,
	"badDays":       strip.BadDays,
	"recentBadDays": recentBadDays,
	"recent":        recentChecks,
	"recentChanges": recentChanges,
	"latencyChart":  strip.LatencyChart,
	"stripWidth":    stripWidth,
	"stripHeight":   func() int { return strip.FileHeight },
}

// whenHTML writes a time as timeHTML does, "never" for none.
func whenHTML(t *record.Time) template.HTML {
	if t == nil {
		return "never"
	}
	return timeHTML(*t)
}

// recentChecks are the checks of h a server's page lists.
func recentChecks(h []record.Check) []record.Check { return h[:min(len(h), RecentChecks)] }

// recentChanges are the status changes of in a server's page lists.
func recentChanges(in []record.Incident) []record.Incident { return in[:min(len(in), RecentChanges)] }

// recentBadDays are the runs of failing days of r a server's page lists.
func recentBadDays(r []strip.DayRun) []strip.DayRun { return r[max(0, len(r)-RecentBadRuns):] }

// stripWidth is the width of the strip of days, in pixels.
func stripWidth(days []record.Day) int { return len(days) * strip.BarStep }

// durationText says a cadence of s seconds.
func durationText(s int64) string { return (time.Duration(s) * time.Second).String() }

// secondsText says how long a status lasted, "ongoing" while it lasts.
func secondsText(s *int64) string {
	if s == nil {
		return "ongoing"
	}
	return lasted(*s)
}

// uptimeText says an uptime and the checks it counts.
func uptimeText(u record.Uptime) string {
	if u.Percent == nil {
		return "no counted checks"
	}
	return fmt.Sprintf("%.2f %% (%s)", *u.Percent, data.Plural(u.Counted, "counted check"))
}

// msText says a phase's time, "none" when it was not measured.
func msText(v *int64) string {
	if v == nil {
		return "none"
	}
	return strconv.FormatInt(*v, 10) + " ms"
}

// percentText says a percentage of counted checks, "no counted checks"
// when there is none.
func percentText(p *float64) string {
	if p == nil {
		return "no counted checks"
	}
	return fmt.Sprintf("%.2f %%", *p)
}

// RecentChecks is how many of the latest checks of its file (at most
// HistoryLen) a server's page lists: its file has them all, and its strip
// and chart show its days. A check was 200 bytes of the page.
const RecentChecks = 5

// RecentBadRuns is how many of the latest runs of days some check failed
// (strip.BadDays) a server's page lists, oldest first: its file's daily
// series has every day, and the strip's image text counts them. A run was
// some 140 bytes of the page: a server checked hourly whose checks failed
// on every other day of its 90 had 45 rows, 6.3 KB.
const RecentBadRuns = 10

// RecentChanges is how many of its latest status changes a server's page
// lists: its feed and its file have them all. A change was 350 bytes of
// the page, seven of them 2.5 KB for a server failing a day a month.
const RecentChanges = 3

// pageMeta is what the head of a page says of it: its title, and the
// description a search engine or a link preview shows; Up is the way to
// the top of the site, where the stylesheet and the script are.
type pageMeta struct {
	Title, Description, Up string
}

// timeHTML writes a time as a <time> element in UTC, absolute: a page
// read an hour after it was published would be wrong to say "3 min ago".
// The pages' small script adds the reader's time zone and how long ago,
// from the datetime attribute, where it may run.
func timeHTML(pt record.Time) template.HTML {
	t := pt.UTC()
	return template.HTML(`<time datetime="` + t.Format(record.TimeLayout) + `">` + t.Format("2006-01-02 15:04:05 UTC") + `</time>`)
}

// htmlTmpl parses the pages' templates when a page is first made, not at
// start: a publish that writes no pages (-no-html) does not pay for it.
var htmlTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(htmlFuncs).ParseFS(htmlFiles, "*.html.tmpl"))
})

// serverPage is what the page of one server shows: its published file, and
// the way back to the top of the site.
type serverPage struct {
	record.ServerFile
	Up   string // relative path to the top of the site: "../", "../../" for an id with a slash
	Base string // the file name of the server's JSON, without .json
	// CertExpired is the reason of a check that met an expired
	// certificate, which the page's warning quotes.
	CertExpired string
}

// AppendServer renders servers/<id>.html from the file whose bytes are
// servers/<id>.json (every field of ServerFile is in the JSON but the
// badges' snippets, which are made of its id and paths), so the preview
// shows only what the JSON says, and appends it to b: a caller that
// renders many pages reuses one buffer (a page is some 30 KB). It is
// written in Go (appendServerPage) but where a link needs the template's
// escaping.
func AppendServer(b []byte, f record.ServerFile) ([]byte, error) {
	p := newServerPage(f)
	if page, ok := appendServerPage(b, p); ok {
		return page, nil
	}
	buf := bytes.NewBuffer(b)
	if err := htmlTmpl().ExecuteTemplate(buf, "server.html.tmpl", p); err != nil {
		return b, fmt.Errorf("render server page %s: %w", f.ID, err)
	}
	return buf.Bytes(), nil
}

// newServerPage is the page of f.
func newServerPage(f record.ServerFile) serverPage {
	return serverPage{ServerFile: f, Up: strings.Repeat("../", 1+strings.Count(f.ID, "/")), Base: f.ID[strings.LastIndexByte(f.ID, '/')+1:], CertExpired: data.DetailCertExpired}
}

// Title is what the server calls itself for people, as its last check
// heard it; "" when it did not say.
func (p serverPage) Title() string {
	if p.LastResult == nil {
		return ""
	}
	return record.ValueOf(p.LastResult.ServerTitle)
}

// Meta is the head of a server's page.
func (p serverPage) Meta() pageMeta {
	return pageMeta{Title: cmp.Or(p.Title(), p.ID) + ": " + p.Label + " · MCP server checks",
		Description: p.ID + ", " + p.Label + ": whether this MCP server answers plug.directory's checks, its uptime, time to answer, tools and status changes.",
		Up:          p.Up}
}

// Answered is the newest check of the history that got an answer, of any
// kind: a server that answered HTTP 500 in 3 ms answered, though it did not
// work. Past the history, the last check that worked answered too. Nil
// when none did; HTTPStatus is known for the last check only.
func (p serverPage) Answered() *answeredCheck {
	for i, c := range p.History {
		if c.LatencyMS == nil {
			continue
		}
		a := &answeredCheck{Started: c.Started, LatencyMS: c.LatencyMS, Worked: c.Status.Answered()}
		if r := p.LastResult; i == 0 && r != nil && r.Started.Equal(c.Started.Time) {
			a.HTTPStatus = r.HTTPStatus
		}
		return a
	}
	if p.LastAnswered != nil {
		return &answeredCheck{Started: *p.LastAnswered, Worked: true}
	}
	return nil
}

// AnswerOlder reports whether an answer may be older than the history
// shows: it is full.
func (p serverPage) AnswerOlder() bool { return len(p.History) >= record.HistoryLen }

// answeredCheck is a check that got an answer.
type answeredCheck struct {
	Started    record.Time
	LatencyMS  *int64
	HTTPStatus *int // nil when not known
	Worked     bool // it worked too (working or needs_key): "last worked" says it
}

// WorkedAtLastCheck reports whether the last check worked: the page's
// first line says so, and "last worked" would repeat the last check.
func (p serverPage) WorkedAtLastCheck() bool {
	return p.LastAnswered != nil && p.LastCheck != nil && p.LastAnswered.Equal(p.LastCheck.Time)
}

// indexPage is what index.html shows: the head of index.json, and first
// of all an overall line and the freshness of status.json.
type indexPage struct {
	record.IndexFile
	Cut    bool // not every row is shown
	Status record.Status
}

// Overall is the index's first line: how many servers have each status,
// in the site's order ("2,031 working, 14 failing"); statuses no server
// has are left out.
func (p indexPage) Overall() string {
	var parts []string
	for _, t := range p.Totals {
		if t.Count > 0 {
			parts = append(parts, checks.Grouped(int64(t.Count))+" "+cmp.Or(overallWords[t.Status], t.Label))
		}
	}
	if len(parts) == 0 {
		return "no servers listed"
	}
	return strings.Join(parts, ", ")
}

// overallWords say a status after a count, where its label would not
// read after one ("1 checks paused at the owner's request").
var overallWords = map[data.Outcome]string{
	data.NeedsKey: "need a key", data.Refused: "refuse our check", data.Paused: "paused at the owner's request",
}

// Meta is the head of the index.
func (p indexPage) Meta() pageMeta {
	return pageMeta{Title: "MCP servers, checked · plug.directory",
		Description: "Whether each MCP server listed on plug.directory starts and answers: its status, uptime over 7 days and tool count, checked every hour or every day."}
}

// Running reports whether the checks are going: a minute was recorded
// within Status.StaleAfterSeconds of this publish.
func (p indexPage) Running() bool {
	r := p.Status.LastMinuteRecorded
	return r != nil && p.Status.Published.Sub(r.Time) <= time.Duration(p.Status.StaleAfterSeconds)*time.Second
}

// Index renders index.html from the totals and the first rows of
// index.json, and the status of the checks.
func Index(f record.IndexFile, cut bool, st record.Status) ([]byte, error) {
	var buf bytes.Buffer
	if err := htmlTmpl().ExecuteTemplate(&buf, "index.html.tmpl", indexPage{IndexFile: f, Cut: cut, Status: st}); err != nil {
		return nil, fmt.Errorf("render index page: %w", err)
	}
	return buf.Bytes(), nil
}

// Checks renders checks.html from the text of the checks page.
func Checks(text []byte) ([]byte, error) {
	var buf bytes.Buffer
	p := struct {
		Meta   pageMeta
		Blocks []checks.Block
	}{pageMeta{Title: "Our checks · plug.directory", Description: "What plug.directory's checks of MCP servers send, from where and how often, and how to stop them."}, checks.Blocks(text)}
	if err := htmlTmpl().ExecuteTemplate(&buf, "checks.html.tmpl", p); err != nil {
		return nil, fmt.Errorf("render checks page: %w", err)
	}
	return buf.Bytes(), nil
}

// lasted says a duration in seconds in the two largest units that apply:
// "3 d 4 h", "1 h 5 min", "5 min", "30 s".
func lasted(s int64) string {
	switch d, h, m := s/86400, s%86400/3600, s%3600/60; {
	case d > 0:
		return fmt.Sprintf("%d d %d h", d, h)
	case h > 0:
		return fmt.Sprintf("%d h %d min", h, m)
	case m > 0:
		return fmt.Sprintf("%d min", m)
	}
	return fmt.Sprintf("%d s", s)
}

// pausedSince is the start of a paused server's current pause, from its
// newest incident; nil when the incidents do not say.
func pausedSince(f record.ServerFile) *record.Time {
	if f.Status != data.Paused || len(f.Incidents) == 0 || f.Incidents[0].Status != data.Paused {
		return nil
	}
	return &f.Incidents[0].Start
}
