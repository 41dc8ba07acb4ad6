package pages

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/site/badge"
	"plug.directory/prober/site/record"
)

// goldenFiles returns the servers' files of the site's golden tree, with
// their badges' snippets, which the JSON does not hold, as a publish
// renders them.
func goldenFiles(t testing.TB) []record.ServerFile {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "testdata", "golden", "servers", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("golden servers' files: %v, %v", paths, err)
	}
	var fs []record.ServerFile
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := record.ReadServerFile(b)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		f.Badges = badge.LinksOf(f.ID)
		fs = append(fs, f)
	}
	return fs
}

// templatePage is what server.html.tmpl writes for f.
func templatePage(t testing.TB, f record.ServerFile) string {
	t.Helper()
	var buf bytes.Buffer
	if err := htmlTmpl().ExecuteTemplate(&buf, "server.html.tmpl", newServerPage(f)); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestServerPageAsTheTemplate: a server's page written in Go is byte for
// byte what server.html.tmpl writes, for the golden servers and for
// thousands of files made from them with every field the page shows
// absent, empty, plain and full of bytes to escape, every status, and
// links of every kind; a page with a link the Go would not escape as the
// template does (not http or https, a query, an id with a space) is the
// template's own, and every other page is written in Go.
func TestServerPageAsTheTemplate(t *testing.T) {
	golden := goldenFiles(t)
	for _, f := range golden {
		got, ok := appendServerPage([]byte("before"), newServerPage(f))
		if want := "before" + templatePage(t, f); !ok || string(got) != want {
			t.Errorf("golden page of %s (in Go: %v) differs from the template's:\n%s", f.ID, ok, firstDifference(string(got), want))
		}
	}
	rng := rand.New(rand.NewPCG(7, 11))
	const variants = 3000
	inGo := 0
	for k := range variants {
		f := vary(rng, golden[k%len(golden)])
		want := templatePage(t, f)
		got, ok := appendServerPage(nil, newServerPage(f))
		if ok != pagePlain(f) {
			t.Errorf("variant %d (id %q): written in Go %v, want %v", k, f.ID, ok, !ok)
		}
		if !ok {
			continue
		}
		inGo++
		if string(got) != want {
			t.Fatalf("variant %d (id %q, status %q) differs from the template's:\n%s", k, f.ID, f.Status, firstDifference(string(got), want))
		}
	}
	if inGo < variants/2 {
		t.Errorf("%d of %d variants written in Go, want most", inGo, variants)
	}
	t.Logf("%d of %d variants written in Go", inGo, variants)
}

// TestServerPageByTheTemplate: AppendServer writes a page the Go cannot
// by the template, escaping its link as the template does.
func TestServerPageByTheTemplate(t *testing.T) {
	f := goldenFiles(t)[0]
	site := `javascript:alert("x")`
	if f.LastResult == nil {
		f.LastResult = &record.LastResult{}
	}
	r := *f.LastResult
	r.ServerWebsite = &site
	f.LastResult = &r
	if _, ok := appendServerPage(nil, newServerPage(f)); ok {
		t.Fatal("a javascript: link written in Go")
	}
	got, err := AppendServer([]byte("before"), f)
	if err != nil || string(got) != "before"+templatePage(t, f) {
		t.Errorf("AppendServer = %v, not the template's page", err)
	}
	if !bytes.Contains(got, []byte(`href="#ZgotmplZ"`)) {
		t.Error("the javascript: link was not filtered out")
	}
}

// pagePlain reports whether every link of f's page is one the Go writes:
// its id, the ids it shares an address with, its website and where to
// get a key.
func pagePlain(f record.ServerFile) bool {
	if !idPlain(f.ID) {
		return false
	}
	for _, id := range f.SharedWith {
		if !idPlain(id) {
			return false
		}
	}
	if r := f.LastResult; r != nil {
		if r.ServerWebsite != nil && !linkPlain(*r.ServerWebsite) {
			return false
		}
		if r.KeyInfo != nil && f.Status == data.NeedsKey && !linkPlain(*r.KeyInfo) {
			return false
		}
	}
	return true
}

// firstDifference shows where got and want part.
func firstDifference(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-80)
	return "got  …" + got[from:min(len(got), i+80)] + "…\nwant …" + want[from:min(len(want), i+80)] + "…"
}

// texts are what a string the page shows may be: empty, plain, and
// every byte html/template escapes, a tag, a quote, non-ASCII and a byte
// not UTF-8.
var texts = []string{"", "plain text", `<script>alert("x")</script>`, "it's & done + more", "é ünïcode", "nul\x00byte", "bad\xffutf8", "<nil>"}

// links are what a link a server gives may be: plain ones the Go writes
// (the first two), and ones it leaves to the template.
var links = []string{"https://example.com", "http://example.com/a/b-c_d.e~f", "https://example.com/a?b=c&d=e", "javascript:alert(1)", "HTTPS://EXAMPLE.COM", "https://ex ample.com", "mailto:a@b.c", "", `https://x.com/"onclick="y`}

// ids are what an id the page links to may be: plain ones (the first
// three), and ones a list would not let in.
var ids = []string{"alpha", "io.github.owner/name", "Owner+Tool@v2/sub.part_x-y", "a b", "a<b>", "é"}

// vary returns a copy of f with each field the page shows set at random
// to one of its forms.
func vary(rng *rand.Rand, f record.ServerFile) record.ServerFile {
	pick := func(ss []string) string { return ss[rng.IntN(len(ss))] }
	// A link or id the Go leaves to the template, one time in six.
	links, ids := links, ids
	if rng.IntN(6) > 0 {
		links, ids = links[:2], ids[:3]
	}
	ptr := func(ss []string) *string {
		if rng.IntN(3) == 0 {
			return nil
		}
		s := pick(ss)
		return &s
	}
	i64 := func() *int64 {
		if rng.IntN(3) == 0 {
			return nil
		}
		v := int64(rng.IntN(3)) * int64(rng.IntN(5000))
		return &v
	}
	at := func() record.Time {
		return record.Time{Time: time.Date(2026, 12, 1+rng.IntN(7), rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(1000)*1e6, time.UTC)}
	}
	tp := func() *record.Time {
		if rng.IntN(3) == 0 {
			return nil
		}
		t := at()
		return &t
	}
	strs := func(ss []string) []string {
		out := make([]string, rng.IntN(4))
		for i := range out {
			out[i] = pick(ss)
		}
		return out
	}
	statuses := append(append([]data.Outcome{}, data.Outcomes...), "", `bo"gus`)
	if rng.IntN(4) == 0 {
		f.ID = pick(ids)
	}
	f.Badges = badge.LinksOf(f.ID)
	f.Status = statuses[rng.IntN(len(statuses))]
	f.Label = pick(texts)
	f.Detail, f.URL = ptr(texts), ptr(texts)
	f.LastCheck, f.LastAnswered, f.NextCheck, f.Listed, f.FailingSince = tp(), tp(), tp(), tp(), tp()
	if rng.IntN(2) == 0 && f.LastCheck != nil {
		t := *f.LastCheck
		f.LastAnswered = &t // it worked at its last check
	}
	f.NextCheckFrom = ptr([]string{"plan", "estimate", ""})
	f.Tier = pick([]string{"hourly", "daily", "<b>"})
	f.Rank = rng.IntN(100000)
	f.EffectiveCad = []int64{0, 3600, 86400 * 3}[rng.IntN(3)]
	f.SharedWith = strs(ids)
	f.LatencyP50 = i64()
	if rng.IntN(4) == 0 {
		f.LastResult = nil
	} else {
		var r record.LastResult
		if f.LastResult != nil {
			r = *f.LastResult
		}
		r.Status, r.Label, r.Detail, r.Started = statuses[rng.IntN(len(statuses))], pick(texts), ptr(texts), at()
		r.LatencyMS = i64()
		if rng.IntN(2) == 0 {
			r.HTTPStatus = nil
		} else {
			v := 200 + rng.IntN(400)
			r.HTTPStatus = &v
		}
		r.ServerName, r.ServerVersion, r.ServerTitle, r.ServerDescription = ptr(texts), ptr(texts), ptr(texts), ptr(texts)
		r.ServerWebsite, r.KeyInfo = ptr(links), ptr(links)
		r.ToolCount, r.Tools = rng.IntN(3), strs(texts)
		if rng.IntN(3) == 0 {
			r.Timings = nil
		} else {
			r.Timings = &record.Timings{Phases: record.Phases{DNSMS: i64(), ConnectMS: i64(), TLSMS: i64(), WaitMS: i64()}, TotalMS: int64(rng.IntN(9000))}
			for range rng.IntN(3) {
				r.Timings.FirstByteMS = append(r.Timings.FirstByteMS, int64(rng.IntN(900)))
			}
		}
		r.ToolProblems = nil
		for range rng.IntN(3) {
			r.ToolProblems = append(r.ToolProblems, data.ToolProblem{Tool: pick(texts), Rule: pick(texts), Message: pick(texts)})
		}
		f.LastResult = &r
	}
	if rng.IntN(3) == 0 {
		f.Certificate = nil
	} else {
		c := record.Certificate{NotAfter: at(), Issuer: pick(texts), Names: strs(texts), TLSVersion: ptr(texts), SeenAt: at(),
			Warning: rng.IntN(2) == 0, Expired: rng.IntN(3) == 0, Message: pick(texts)}
		f.Certificate = &c
	}
	f.History = f.History[:rng.IntN(len(f.History)+1)]
	for len(f.History) < 7 && rng.IntN(3) == 0 {
		f.History = append(f.History, record.Check{Started: at(), Status: statuses[rng.IntN(len(statuses))], Detail: pick(texts), LatencyMS: i64()})
	}
	if rng.IntN(5) == 0 {
		f.History = make(record.History, record.HistoryLen) // full: an answer may be older
	}
	f.Incidents = f.Incidents[:rng.IntN(len(f.Incidents)+1)]
	for range rng.IntN(5) {
		f.Incidents = append(f.Incidents, record.Incident{Status: statuses[rng.IntN(len(statuses))], Label: pick(texts), Detail: ptr(texts), Start: at(), DurationSeconds: i64()})
	}
	switch rng.IntN(3) {
	case 0:
		f.Daily = f.Daily[:rng.IntN(len(f.Daily)+1)]
	case 1:
		f.Daily = varyDays(rng)
	}
	f.ToolDefs = record.ToolDefinitions{Hash: ptr(texts), Seen: tp(), ChangedAt: tp()}
	for range rng.IntN(3) {
		c := record.ToolChange{At: at(), Details: rng.IntN(3) > 0, Added: strs(texts), Removed: strs(texts)}
		for range rng.IntN(3) {
			c.Changed = append(c.Changed, record.ToolFieldChange{Name: pick(texts), Fields: strs(texts)})
		}
		f.ToolDefs.Changes = append(f.ToolDefs.Changes, c)
	}
	if rng.IntN(3) == 0 {
		f.Protocol = nil
	} else {
		yes := rng.IntN(2) == 0
		p := record.Protocol{Version: pick(texts), Era: pick(texts), Transport: pick(texts), DiscoverVersions: strs(texts),
			Speaks20260728: rng.IntN(2) == 0, Answers: ptr([]string{"json", "sse", "mixed", "<x>"}), SeenAt: at()}
		if rng.IntN(3) > 0 {
			p.Session = &yes
		}
		f.Protocol = &p
	}
	return f
}

// varyDays returns up to 90 days, some not listed, with nothing counted,
// all working, or some failing, in runs of a day or more: more runs of
// failing days than a page lists, and runs of several days.
func varyDays(rng *rand.Rand) record.DailySeries {
	days := make(record.DailySeries, rng.IntN(91))
	first := time.Date(2026, 9, 9, 0, 0, 0, 0, time.UTC)
	bad := false
	for i := range days {
		if rng.IntN(4) == 0 {
			bad = !bad
		}
		d := record.Day{Date: first.AddDate(0, 0, i).Format(time.DateOnly), Listed: rng.IntN(10) > 0, Counted: rng.IntN(25)}
		d.Answered = d.Counted
		if bad && d.Counted > 0 {
			d.Answered = rng.IntN(d.Counted)
		}
		d.Percent = record.PercentOf(d.Answered, d.Counted)
		if d.Answered > 0 {
			p50, p95 := int64(rng.IntN(900)), int64(900+rng.IntN(9000))
			d.LatencyP50MS, d.LatencyP95MS = &p50, &p95
		}
		days[i] = d
	}
	return days
}

// BenchmarkServerPage writes the golden servers' pages in Go, against
// BenchmarkBaselineServerPageTemplate, the template engine.
func BenchmarkServerPage(b *testing.B) {
	fs := goldenFiles(b)
	var buf []byte
	for i := 0; b.Loop(); i++ {
		var ok bool
		if buf, ok = appendServerPage(buf[:0], newServerPage(fs[i%len(fs)])); !ok {
			b.Fatal("a golden page not written in Go")
		}
	}
}

func BenchmarkBaselineServerPageTemplate(b *testing.B) {
	fs := goldenFiles(b)
	var buf bytes.Buffer
	for i := 0; b.Loop(); i++ {
		buf.Reset()
		if err := htmlTmpl().ExecuteTemplate(&buf, "server.html.tmpl", newServerPage(fs[i%len(fs)])); err != nil {
			b.Fatal(err)
		}
	}
}
