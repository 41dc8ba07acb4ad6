package site

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/site/badge"
	"plug.directory/prober/site/record"
	"plug.directory/prober/site/strip"
)

// storyServer is listed 60 days before fixNow and checked twice a day:
// working, failing all day 50 days ago (before the 31 days an incremental
// run reads), refused all day 10 days ago, needs a key the last 3 days.
var storyServer = data.Server{ID: "hotel", Rank: 8, URL: "https://hotel.example.com/mcp", Added: fixNow.Add(-60 * 24 * time.Hour)}

// storyAt returns hotel's outcome on the day that many days before fixNow's.
func storyAt(day int) (data.Outcome, string) {
	switch {
	case day <= 3:
		return data.NeedsKey, "HTTP 401"
	case day == 10:
		return data.Refused, "HTTP 429"
	case day == 50:
		return data.Failing, "HTTP 503"
	}
	return data.Working, ""
}

// story returns, in a directory of t's own, hotel's 60 days published
// day by day, as the prober would, at fixNow. A check of day d at hour h
// takes 100*(h+d%7) ms. The 61 publishes are made once per test binary.
// With -short it folds and publishes once a week and on the last day (10
// publishes), each taking in a week of checks and the changes among them;
// make test publishes every day.
func story(t *testing.T) *fixture {
	t.Helper()
	return storyFixture.copy(t, func(f *fixture) {
		f.writeServers([]data.Server{storyServer})
		for day := 60; day >= 0; day-- {
			var rs []data.Result
			for _, h := range []int{3, 15} {
				at := fixNow.Truncate(24*time.Hour).AddDate(0, 0, -day).Add(time.Duration(h) * time.Hour)
				if at.After(fixNow) {
					continue
				}
				o, why := storyAt(day)
				r := result(storyServer, at, o, why)
				r.Duration = time.Duration(100*(h+day%7)) * time.Millisecond
				rs = append(rs, r)
			}
			f.results(rs...)
			if testing.Short() && day%7 != 4 && day != 0 {
				continue
			}
			f.now = fixNow.Truncate(24*time.Hour).AddDate(0, 0, -day).Add(20 * time.Hour)
			if f.now.After(fixNow) {
				f.now = fixNow
			}
			f.fold()
			f.MustPublish()
		}
	})
}

// storyFixture is story's.
var storyFixture builtFixture

func TestHistory(t *testing.T) {
	t.Parallel()
	f := story(t)
	got := readServerFile(t, f, "hotel")
	t.Run("daily_90_days_oldest_first", func(t *testing.T) {
		if len(got.Daily) != record.DailyLen || got.Daily[record.DailyLen-1].Date != "2026-12-02" || got.Daily[0].Date != "2026-09-04" {
			t.Fatalf("daily: %d days from %s to %s", len(got.Daily), got.Daily[0].Date, got.Daily[len(got.Daily)-1].Date)
		}
		listed, counted := 0, 0
		for _, d := range got.Daily {
			if d.Listed {
				listed++
			}
			if d.Counted > 0 {
				counted++
			}
			if !d.Listed && d.Counted != 0 {
				t.Errorf("%s: counted before it was listed", d.Date)
			}
		}
		if listed != 61 || counted != 60 {
			t.Errorf("%d days listed, %d counted; want 61 and 60 (the refused day counts nothing)", listed, counted)
		}
	})
	t.Run("daily_figures_kept_beyond_the_checks_window", func(t *testing.T) {
		// 50 and 40 days ago: counted from their checks then, kept since.
		d := got.Daily[record.DailyLen-1-50]
		if d.Counted != 2 || d.Answered != 0 || d.Percent == nil || *d.Percent != 0 || d.LatencyP50MS != nil {
			t.Errorf("%s = %+v, want 2 counted, none answered, 0 %%, no latency", d.Date, d)
		}
		d = got.Daily[record.DailyLen-1-40]
		if d.Counted != 2 || *d.Percent != 100 || *d.LatencyP50MS != 100*(3+40%7) || *d.LatencyP95MS != 100*(15+40%7) {
			t.Errorf("%s = %+v, want 100 %%, median %d, p95 %d", d.Date, d, 100*(3+40%7), 100*(15+40%7))
		}
		r := got.Daily[record.DailyLen-1-10] // refused all day: nothing counted
		if r.Counted != 0 || r.Percent != nil || !r.Listed {
			t.Errorf("%s = %+v, want listed and nothing counted", r.Date, r)
		}
	})
	t.Run("incidents_newest_first", func(t *testing.T) {
		var seq []string
		for _, in := range got.Incidents {
			seq = append(seq, string(record.ValueOf(in.From))+">"+string(in.Status))
			if in.From != nil && *in.From == "" {
				t.Errorf("incident of %s: from %q, want null for the first check ever", in.Start, *in.From)
			}
		}
		want := ">working working>failing failing>working working>refused refused>working working>needs_key"
		if g := strings.Join(reverse(seq), " "); g != want {
			t.Errorf("incidents %s\nwant %s", g, want)
		}
		last := got.Incidents[0]
		if last.End != nil || last.DurationSeconds != nil || record.ValueOf(last.Detail) != "HTTP 401" {
			t.Errorf("ongoing incident %+v", last)
		}
		f503 := got.Incidents[4]
		if record.ValueOf(f503.Detail) != "HTTP 503" || f503.Status != data.Failing || f503.DurationSeconds == nil || *f503.DurationSeconds != 24*3600 {
			t.Errorf("failing incident %+v, want a day long", f503)
		}
	})
	t.Run("svg_strip_and_latency_chart", func(t *testing.T) { checkStrip(t, f) })
	t.Run("rebuild_from_parquet_gives_the_same_series_and_incidents", func(t *testing.T) {
		want := got
		for _, dir := range []string{filepath.Join(f.dir, "site"), f.out} {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
		}
		if st := f.MustPublish(); !st.Rebuilt {
			t.Fatal("not a rebuild")
		}
		re := readServerFile(t, f, "hotel")
		if !reflect.DeepEqual(re.Incidents, want.Incidents) {
			t.Errorf("incidents after a rebuild:\n%+v\nwant\n%+v", re.Incidents, want.Incidents)
		}
		if !reflect.DeepEqual(re.Daily, want.Daily) {
			t.Errorf("daily series differs after a rebuild")
		}
	})
}

func reverse(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

func TestIncidentsPause(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	f.MustPublish()
	// foxtrot is resumed an hour later and then answers.
	f.now = fixNow.Add(time.Hour)
	f.writePaused("")
	f.MustPublish()
	f.now = fixNow.Add(2 * time.Hour)
	f.results(result(srvPaused, fixNow.Add(90*time.Minute), data.Working, ""))
	f.MustPublish()
	in := readServerFile(t, f, "foxtrot").Incidents
	if len(in) != 3 || in[1].Status != data.Paused || !in[1].Start.Equal(fixNow) || in[1].End == nil || !in[1].End.Equal(fixNow.Add(time.Hour)) ||
		in[0].Status != data.Working || record.ValueOf(in[0].From) != data.Paused || !in[0].Start.Equal(fixNow.Add(90*time.Minute)) {
		t.Errorf("foxtrot incidents %+v, want working, paused an hour, working again", in)
	}
	// Its badges follow, though each run writes only the badges that change.
	for dir, want := range map[string]string{"badges": "working", "badges-uptime": "100%", "badges-latency": "1200 ms"} {
		var b badge.Badge
		raw, err := os.ReadFile(filepath.Join(f.out, dir, "foxtrot.json"))
		if err := errors.Join(err, json.Unmarshal(raw, &b)); err != nil || b.Message != want {
			t.Errorf("%s/foxtrot.json says %q (%v), want %q", dir, b.Message, err, want)
		}
	}
}

// svgDoc is what checkStrip reads of an SVG.
type svgDoc struct {
	XMLName xml.Name  `xml:"svg"`
	Label   string    `xml:"aria-label,attr"` // what it says to a screen reader
	Paths   []svgPath `xml:"path"`            // the strip's bars, the latency chart's segments and ticks
	// The latency chart's.
	ViewBox string   `xml:"viewBox,attr"`
	Width   string   `xml:"width,attr"`
	Texts   []string `xml:"text"`
	Bars    struct {
		Paths []svgPath `xml:"path"` // the segments' areas, under the mask of bars
	} `xml:"g"`
	Groups []struct {
		XMLName xml.Name
	} `xml:",any"` // its other elements
}

// chartDraws reads the latency chart's paths as what they draw: for each
// segment's class, the top of its area over each day (the baseline where
// it does not rise), and for "p95" the height of each day's tick; "base"
// holds the baseline, where each area starts.
func chartDraws(t *testing.T, paths []svgPath) map[string]map[int]int {
	t.Helper()
	token := regexp.MustCompile(`[MmVh]|-?[0-9]+`)
	draws := map[string]map[int]int{"base": {}}
	for _, p := range paths {
		draws[p.Class] = map[int]int{}
		toks := token.FindAllString(p.D, -1)
		num := func(k int) int {
			n, err := strconv.Atoi(toks[k])
			if err != nil {
				t.Fatalf("latency chart: path %s: %q at %d of %q", p.Class, toks[k], k, p.D)
			}
			return n
		}
		x, y := 0, 0
		for k := 0; k < len(toks); k++ {
			switch toks[k] {
			case "M":
				x, y, k = num(k+1), num(k+2), k+2
				if p.Class != "p95" {
					draws["base"][0] = y
				}
			case "m":
				x, y, k = x+num(k+1), y+num(k+2), k+2
			case "V":
				y, k = num(k+1), k+1
			case "h":
				n := num(k + 1)
				if n <= 0 || (x-strip.ChartLeft)%strip.ChartStep != 0 || n%strip.ChartStep != 0 {
					t.Fatalf("latency chart: path %s: h%d from x %d spans no whole days", p.Class, n, x)
				}
				for day := (x - strip.ChartLeft) / strip.ChartStep; day < (x+n-strip.ChartLeft)/strip.ChartStep; day++ {
					draws[p.Class][day] = y
				}
				x, k = x+n, k+1
			default:
				t.Fatalf("latency chart: path %s: unexpected %q in %q", p.Class, toks[k], p.D)
			}
		}
	}
	return draws
}

// checkStrip reads the uptime strip and the latency chart of hotel's page as
// XML and checks them against its daily series, and the words that stand
// for them.
func checkStrip(t *testing.T, f *fixture) {
	sf := readServerFile(t, f, "hotel")
	b, err := os.ReadFile(filepath.Join(f.out, "servers", "hotel.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	parse := func(class string) svgDoc {
		t.Helper()
		i := strings.Index(page, `<svg class="`+class+`"`)
		j := strings.Index(page[i:], "</svg>")
		if i < 0 || j < 0 {
			t.Fatalf("no %s svg in the page", class)
		}
		var d svgDoc
		if err := xml.Unmarshal([]byte(page[i:i+j+len("</svg>")]), &d); err != nil {
			t.Fatalf("%s svg: %v", class, err)
		}
		return d
	}
	// The page shows the strip's file as an image.
	sb, err := os.ReadFile(filepath.Join(f.out, strip.Dir, "hotel.svg"))
	if err != nil {
		t.Fatal(err)
	}
	var doc svgDoc
	if err := xml.Unmarshal(sb, &doc); err != nil {
		t.Fatalf("strip: %v", err)
	}
	if !strings.Contains(page, `<figure><img src="../`+strip.Dir+`/hotel.svg" width="720" height="48" alt="`) {
		t.Errorf("the page does not show the strip's file as an image of its size")
	}
	bars := dayBars(t, doc.Paths, record.DailyLen)
	// Nothing but its paths, their patterns and the chart's gridlines:
	// no tooltip a day.
	only := func(name string, d svgDoc, allowed ...string) {
		for _, g := range d.Groups {
			if !slices.Contains(allowed, g.XMLName.Local) {
				t.Errorf("the %s holds a <%s>", name, g.XMLName.Local)
			}
		}
	}
	only("strip", doc, "title", "rect", "defs", "g")
	classes := map[string]int{}
	for i, d := range sf.Daily {
		if bars[i].Class != "day "+strip.DayClass(d) {
			t.Errorf("bar %d: class %q for %+v", i, bars[i].Class, d)
		}
		classes[bars[i].Class]++
	}
	want := map[string]int{"day unlisted": 29, "day working": 59, "day failing": 1, "day nodata": 1}
	if !reflect.DeepEqual(classes, want) {
		t.Errorf("bar classes %v, want %v", classes, want)
	}
	// What a reader who does not see the colours is told instead: how many
	// days of each, and the failing day in a table.
	if w := `alt="uptime per day, last 90 days: every check worked on 59 days, most failed on 1 day, nothing counted on 1 day, not listed yet on 29 days">`; !strings.Contains(page, w) {
		t.Errorf("the strip's image does not say %s", w)
	}
	bad := sf.Daily[record.DailyLen-1-50].Date
	if w := "<tr><td>" + bad + "</td><td data-label=\"Checks\">2 counted checks, 0 worked</td><td data-label=\"Uptime\">0 %</td></tr>"; !strings.Contains(page, "<caption>The days some check failed</caption>") || !strings.Contains(page, w) {
		t.Errorf("the page does not list the failing day as %s", w)
	}
	chart := parse("latency-chart")
	only("latency chart", chart, "line", "defs", "g")
	if w := "latency per day, on 59 days with a check that worked: median from "; !strings.HasPrefix(chart.Label, w) {
		t.Errorf("latency chart: label %q, want %q...", chart.Label, w)
	}
	// A day with an answer has a bar (the segments' areas rise above the
	// baseline over its day, each no lower than the one below it) and a
	// p95 tick; a day without, none.
	draws := chartDraws(t, append(chart.Bars.Paths, chart.Paths...))
	// Each area covers the ones drawn before it below its top: the
	// highest first, or a segment would hide the ones above it.
	drawOrder := []string{"rest", "wait", "tls", "connect", "dns"}
	for k, p := range chart.Bars.Paths {
		if k > 0 && slices.Index(drawOrder, p.Class) <= slices.Index(drawOrder, chart.Bars.Paths[k-1].Class) {
			t.Errorf("latency chart: %s's area drawn after %s's, want the order %q", p.Class, chart.Bars.Paths[k-1].Class, drawOrder)
		}
	}
	if len(chart.Bars.Paths) < 4 {
		t.Errorf("latency chart: %d areas, want rest, wait, tls and connect's at least", len(chart.Bars.Paths))
	}
	base := draws["base"][0]
	at := func(class string, day int) int { // a class with no path stays at the baseline
		if y, ok := draws[class][day]; ok {
			return y
		}
		return base
	}
	drawn := 0
	for i, d := range sf.Daily {
		top, tick := at("rest", i), draws["p95"][i]
		if got := top < base && tick > 0; got != (d.LatencyP50MS != nil) {
			t.Errorf("latency chart, day %d: rest's top %d, tick %d over the baseline %d for %+v; want a bar and a tick on a day with an answer, none on another", i, top, tick, base, d)
		}
		if top < base {
			drawn++
		}
		below := base
		for _, class := range []string{"dns", "connect", "tls", "wait", "rest"} {
			if at(class, i) > below {
				t.Errorf("latency chart, day %d: %s's top %d is below the top %d of the segment under it", i, class, at(class, i), below)
			}
			below = at(class, i)
		}
	}
	if drawn != 59 {
		t.Errorf("latency chart: bars on %d days, want 59", drawn)
	}
	if !strings.HasPrefix(chart.ViewBox, "0 0 ") || chart.Width != "" {
		t.Errorf("latency chart: viewBox %q, width %q; want a viewBox and no fixed width", chart.ViewBox, chart.Width)
	}
	labels := chart.Texts
	if len(labels) != 3 || labels[0] != "0" {
		t.Errorf("latency chart scale %q: want 0, the middle and the top written", labels)
	}
}
