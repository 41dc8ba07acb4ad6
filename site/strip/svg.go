// Package strip draws a server's daily series (record.Day) as SVG: the
// uptime strip as a file that stands alone (File, written to
// Dir/<id>.svg), which its page and a README show as an image, and the
// latency chart that its page embeds (LatencyChart).
package strip

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"

	"plug.directory/prober/data"
	"plug.directory/prober/site/record"
)

// Geometry of the daily strips of a server's page, in SVG user units.
const (
	BarWidth = 6
	BarStep  = 8
	Height   = 28
)

// DayClass names how a day's bar is drawn: with the colour of table O for
// "working" when every counted check answered, "refused"'s for a day
// partly failing, "failing"'s when at most half answered; "nodata" (grey
// outline) when nothing counted, "unlisted" (dashed, faint) before the
// server was listed.
func DayClass(d record.Day) string {
	switch {
	case !d.Listed:
		return "unlisted"
	case d.Percent == nil:
		return "nodata"
	case d.Answered == d.Counted:
		return "working"
	case 2*d.Answered > d.Counted:
		return "refused"
	}
	return "failing"
}

// DayPaint is how each class of DayClass is drawn, as SVG presentation
// attributes: inline, so that the strip needs no stylesheet, in the page
// as in its file of its own (File), which a README shows as an image.
var DayPaint = map[string]string{
	"working":  `fill="#2a8a2a"`,
	"refused":  `fill="#b8860b"`,
	"failing":  `fill="#c0392b"`,
	"nodata":   `fill="#fff" stroke="#999" stroke-width="1"`,
	"unlisted": `fill="#fafafa" stroke="#ddd" stroke-width="1" stroke-dasharray="2 2"`,
}

// Summary names what the strip shows: "uptime per day, last 90 days".
func Summary(days []record.Day) string {
	return fmt.Sprintf("uptime per day, last %d days", len(days))
}

// DaysSummary says in words what the strip's colours show: how many of
// its days were of each class of DayClass. A server's page shows the
// strip's file (File) as an image, which these words stand for, and lists
// the days that were not all working (BadDays): the strip drawn in the
// page as well was 0.7 KB of it, the same bars as the file's.
func DaysSummary(days []record.Day) string {
	n := map[string]int{}
	for _, d := range days {
		n[DayClass(d)]++
	}
	s := "every check worked on " + data.Plural(n["working"], "day")
	for _, c := range []struct{ class, words string }{{"refused", "some failed"}, {"failing", "most failed"}, {"nodata", "nothing counted"}, {"unlisted", "not listed yet"}} {
		if n[c.class] > 0 {
			s += fmt.Sprintf(", %s on %s", c.words, data.Plural(n[c.class], "day"))
		}
	}
	return s
}

// DayRun is a run of consecutive days of a class of DayClass, with their
// checks added up.
type DayRun struct {
	From, To          string
	Class             string
	Days              int
	Counted, Answered int
}

// Percent is the run's uptime, two decimals at most.
func (r DayRun) Percent() string { return record.TrimPercent(*record.PercentOf(r.Answered, r.Counted)) }

// BadDays returns the runs of consecutive days on which some counted
// check failed ("refused" and "failing" of DayClass), oldest first: the
// days the strip's colours single out, in words, for a reader who does
// not see them. A run, not a row a day: as many rows as the days changed.
func BadDays(days []record.Day) []DayRun {
	var out []DayRun
	for i := 0; i < len(days); {
		class := DayClass(days[i])
		if class != "refused" && class != "failing" {
			i++
			continue
		}
		r := DayRun{From: days[i].Date, Class: class}
		for ; i < len(days) && DayClass(days[i]) == class; i++ {
			r.To, r.Days = days[i].Date, r.Days+1
			r.Counted += days[i].Counted
			r.Answered += days[i].Answered
		}
		out = append(out, r)
	}
	return out
}

// dayClasses are the classes of DayClass, in the order their paths are
// drawn.
var dayClasses = []string{"unlisted", "nodata", "working", "refused", "failing"}

// appendBars appends the bars of the strip from y = 0: for each class of
// DayClass its days have, a pattern of one bar every BarStep, painted as
// DayPaint says, and a path of that class filled with it, with a subpath
// for each run of consecutive days of the class. A day's paint is written
// once, not once a day, and a run of days once: 90 days of a server
// checked on one of them weigh some 500 bytes (a subpath a day was 1,400,
// a rect a day some 120 each). Appended, not formatted: a thousand
// servers a minute.
func appendBars(b []byte, days []record.Day) []byte {
	classes := make([]string, len(days))
	has := map[string]bool{}
	for i, d := range days {
		classes[i] = DayClass(d)
		has[classes[i]] = true
	}
	b = append(b, `<defs>`...)
	for _, class := range dayClasses {
		if !has[class] {
			continue
		}
		b = append(b, `<pattern id="day-`...)
		b = append(b, class...)
		b = append(b, `" width="`+strconv.Itoa(BarStep)+`" height="`+strconv.Itoa(Height)+`" patternUnits="userSpaceOnUse"><path `...)
		b = append(b, DayPaint[class]...)
		if strings.Contains(DayPaint[class], "stroke") { // its outline inside the bar, not cut by the tile's edge
			b = append(b, ` d="`+barOutlined+`"/></pattern>`...)
		} else {
			b = append(b, ` d="M0`+BarPath+`"/></pattern>`...)
		}
	}
	b = append(b, `</defs>`...)
	for _, class := range dayClasses {
		if !has[class] {
			continue
		}
		b = append(b, `<path class="day `...)
		b = append(b, class...)
		b = append(b, `" fill="url(#day-`...)
		b = append(b, class...)
		b = append(b, `)" d="`...)
		for i := 0; i < len(days); i++ {
			if classes[i] != class {
				continue
			}
			j := i + 1
			for j < len(days) && classes[j] == class {
				j++
			}
			w := int64((j-i)*BarStep - (BarStep - BarWidth))
			b = append(b, 'M')
			b = strconv.AppendInt(b, int64(i*BarStep), 10)
			b = append(b, " 0h"...)
			b = strconv.AppendInt(b, w, 10)
			b = append(b, "v"+strconv.Itoa(Height)+"h-"...)
			b = strconv.AppendInt(b, w, 10)
			b = append(b, 'z')
			i = j - 1
		}
		b = append(b, `"/>`...)
	}
	return b
}

// BarPath draws a bar from the point a subpath moves to, at y = 0.
var BarPath = " 0h" + strconv.Itoa(BarWidth) + "v" + strconv.Itoa(Height) + "h-" + strconv.Itoa(BarWidth) + "z"

// barOutlined draws a bar with an outline of one unit inside its edges.
var barOutlined = "M.5 .5h" + strconv.Itoa(BarWidth-1) + "v" + strconv.Itoa(Height-1) + "h-" + strconv.Itoa(BarWidth-1) + "z"

// Geometry of the strip's file of its own, below the bars: a line of
// text, its first and last days and the uptime of the period.
const (
	stripTextY = Height + 15
	FileHeight = Height + 20
	stripFont  = 11
)

// File returns badges-strip/<id>.svg: the server's strip as an SVG
// document that stands alone, for its page's and a README's <img>:
// colours inline, a white ground (a dark page would swallow the grey
// outlines), and under the bars the first and last days and the period's
// uptime, which the page says in words too (Summary, DaysSummary). Its bars have no titles,
// which an image does not show: so the file changes only when a day's
// colour or the period's uptime does, not with every check.
func File(id string, days []record.Day) []byte {
	w := len(days) * BarStep
	period := "no counted checks"
	if u := record.PeriodUptime(days); u.Percent != nil {
		period = record.TrimPercent(*u.Percent) + " %"
	}
	label := id + ": " + Summary(days) + ": " + period
	b := make([]byte, 0, 800+len(days)*16)
	b = append(b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"...)
	b = fmt.Appendf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		w, FileHeight, w, FileHeight, template.HTMLEscapeString(label))
	b = fmt.Appendf(b, `<title>%s</title><rect width="%d" height="%d" fill="#fff"/>`, template.HTMLEscapeString(label), w, FileHeight)
	b = appendBars(b, days)
	if len(days) > 0 {
		b = fmt.Appendf(b, `<g font-family="Verdana,DejaVu Sans,sans-serif" font-size="%d">`, stripFont)
		text := func(x int, anchor, s string) {
			b = fmt.Appendf(b, `<text x="%d" y="%d" fill="#555" text-anchor="%s">%s</text>`, x, stripTextY, anchor, s)
		}
		text(0, "start", days[0].Date)
		text(w/2, "middle", fmt.Sprintf("%d days: %s", len(days), period))
		text(w, "end", days[len(days)-1].Date)
		b = append(b, `</g>`...)
	}
	return append(b, "</svg>\n"...)
}

// Geometry of the latency chart, in SVG user units: narrow days, so that
// the whole chart scales down to a phone's width with its labels readable.
const (
	ChartStep   = 4   // per day
	ChartLeft   = 44  // room for the scale's labels
	chartTop    = 8   // above the highest gridline
	chartPlot   = 100 // height of the plot
	chartBottom = 4
	chartFont   = 10
)

// chartPhases are the segments of a day's bar, bottom up, in the order of
// a request's life: Spread of the phase (nil: none), class, words.
var chartPhases = []struct {
	of    func(*record.DayPhases) *record.Spread
	class string
	name  string
}{
	{func(p *record.DayPhases) *record.Spread { return p.DNS }, "dns", "DNS"},
	{func(p *record.DayPhases) *record.Spread { return p.Connect }, "connect", "connect"},
	{func(p *record.DayPhases) *record.Spread { return p.TLS }, "tls", "TLS"},
	{func(p *record.DayPhases) *record.Spread { return p.Wait }, "wait", "server"},
}

// LatencyChart draws where the answered checks' time went, a bar a day
// over the days of the strip: the medians of DNS, connect, TLS and the
// server's wait stacked, what is left of the median check on top ("rest":
// reading the answers, the check's own work), and the 95th percentile of
// the whole check as a tick above. A scale with three gridlines says the
// milliseconds. A day without an answered check has no bar. It scales
// with its width (a viewBox, no fixed size). Its label says the range of
// the days' figures (latencySummary); the days have no tooltips, which
// weighed 160 bytes a day.
//
// A segment's class is a path, an area from the baseline up to the top
// of the segment's day after day (appendSteps), the highest drawn first
// so that each covers the part of the one before it below its own top:
// what shows of a class is its segment. A mask of bars, one every
// ChartStep, cuts the areas into a bar a day. A day costs some 5 bytes a
// class ("V57h4"), where a line a day was 11 ("M46 99V57").
func LatencyChart(days []record.Day) template.HTML {
	var top int64
	for _, d := range days {
		if d.LatencyP95MS != nil {
			top = max(top, *d.LatencyP95MS)
		}
	}
	w, h := ChartLeft+len(days)*ChartStep, chartTop+chartPlot+chartBottom
	var b strings.Builder
	if top == 0 {
		fmt.Fprintf(&b, `<svg class="latency-chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img" aria-label="latency per day: no check worked in these days"><text class="axis" x="%d" y="%d" font-size="%d">no check worked in these days</text></svg>`, w, h, ChartLeft, chartTop+chartPlot/2, chartFont)
		return template.HTML(b.String())
	}
	fmt.Fprintf(&b, `<svg class="latency-chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img" aria-label="%s">`, w, h, latencySummary(days))
	top = niceCeil(top)
	y := func(ms int64) int {
		return int(math.Round(float64(chartTop+chartPlot) - float64(chartPlot)*float64(ms)/float64(top)))
	}
	for _, ms := range []int64{0, top / 2, top} {
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%d" y2="%d"/><text class="axis" x="%d" y="%d" font-size="%d" text-anchor="end">%s</text>`,
			ChartLeft, w, y(ms), y(ms), ChartLeft-3, y(ms)+chartFont/3, chartFont, msLabel(ms))
	}
	fmt.Fprintf(&b, `<defs><pattern id="chart-bar" width="%d" height="%d" patternUnits="userSpaceOnUse"><path fill="#fff" d="M.5 0h%dv%dh-%dz"/></pattern>`+
		`<mask id="chart-bars"><path fill="url(#chart-bar)" d="M%d 0h%dv%dh-%dz"/></mask></defs><g mask="url(#chart-bars)">`,
		ChartStep, h, ChartStep-1, h, ChartStep-1, ChartLeft, w-ChartLeft, h, w-ChartLeft)
	// tops[c][i] is the top of class c's segment on day i, chartClasses'
	// order: the baseline on a day without an answer.
	base := y(0)
	tops := make([][]int, len(chartPhases)+1)
	for c := range tops {
		tops[c] = make([]int, len(days))
	}
	var ticks []byte
	var tickEnd, tickY, tickRun int
	for i, d := range days {
		for c := range tops {
			tops[c][i] = base
		}
		if d.LatencyP50MS == nil {
			continue
		}
		var sum int64
		for c, ph := range chartPhases {
			if d.Phases != nil {
				if s := ph.of(d.Phases); s != nil && s.P50 > 0 {
					sum += s.P50
				}
			}
			tops[c][i] = y(sum)
		}
		rest := y(max(sum, *d.LatencyP50MS))
		if rest == base { // answered in under a unit: still a bar, not nothing
			rest--
		}
		tops[len(chartPhases)][i] = rest
		// A tick a day, a move to it from the end of the one before,
		// and one line along the days of a run at the same height.
		x, ty := ChartLeft+i*ChartStep, y(*d.LatencyP95MS)
		switch {
		case ticks == nil:
			ticks = fmt.Appendf(ticks, "M%d %d", x, ty)
		case x == tickEnd && ty == tickY:
			tickEnd, tickRun = tickEnd+ChartStep, tickRun+1
			continue
		default:
			ticks = appendRel(fmt.Appendf(ticks, "h%dm", tickRun*ChartStep), x-tickEnd, ty-tickY)
		}
		tickEnd, tickY, tickRun = x+ChartStep, ty, 1
	}
	if ticks != nil {
		ticks = fmt.Appendf(ticks, "h%d", tickRun*ChartStep)
	}
	for c := len(tops) - 1; c >= 0; c-- {
		if d := appendSteps(nil, tops[c], base); d != nil {
			fmt.Fprintf(&b, `<path class="%s" d="%s"/>`, chartClasses[c], d)
		}
	}
	b.WriteString(`</g>`)
	if ticks != nil {
		fmt.Fprintf(&b, `<path class="p95" d="%s"/>`, ticks)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// appendSteps appends the outline of an area from the baseline up to
// tops, a step of ChartStep a day from ChartLeft: "V" to a day's top where
// it differs from the day before, and "h" along the days of a top; nil
// when no day rises above the baseline. Filled, the path closes itself
// back along the baseline.
func appendSteps(b []byte, tops []int, base int) []byte {
	if !slices.ContainsFunc(tops, func(t int) bool { return t != base }) {
		return nil
	}
	b = fmt.Appendf(b, "M%d %d", ChartLeft, base)
	cur, run := base, 0
	for _, t := range tops {
		if t != cur {
			if run > 0 {
				b = fmt.Appendf(b, "h%d", run*ChartStep)
			}
			b, cur, run = fmt.Appendf(b, "V%d", t), t, 0
		}
		run++
	}
	b = fmt.Appendf(b, "h%d", run*ChartStep)
	if cur != base {
		b = fmt.Appendf(b, "V%d", base)
	}
	return b
}

// appendRel appends the two numbers of a relative move, the second's sign
// its own separator when it is negative.
func appendRel(b []byte, dx, dy int) []byte {
	b = strconv.AppendInt(b, int64(dx), 10)
	if dy >= 0 {
		b = append(b, ' ')
	}
	return strconv.AppendInt(b, int64(dy), 10)
}

// latencySummary says in words what the latency chart shows: on how many
// days a check worked, the lowest and highest of their medians, and the
// highest 95th percentile.
func latencySummary(days []record.Day) string {
	var n int
	var lo, hi, p95 int64
	for _, d := range days {
		if d.LatencyP50MS == nil {
			continue
		}
		if n == 0 || *d.LatencyP50MS < lo {
			lo = *d.LatencyP50MS
		}
		hi, p95 = max(hi, *d.LatencyP50MS), max(p95, *d.LatencyP95MS)
		n++
	}
	median := fmt.Sprintf("from %d to %d ms", lo, hi)
	if lo == hi {
		median = fmt.Sprintf("%d ms", lo)
	}
	return fmt.Sprintf("latency per day, on %s with a check that worked: median %s, 95th percentile up to %d ms", data.Plural(n, "day"), median, p95)
}

// chartClasses are the classes of the chart's segments, bottom up: the
// phases (chartPhases), then the rest.
var chartClasses = []string{"dns", "connect", "tls", "wait", "rest"}

// niceCeil returns the smallest of 1, 2 or 5 times a power of ten at or
// above ms: the scale's top.
func niceCeil(ms int64) int64 {
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if m*p >= ms {
				return m * p
			}
		}
	}
}

// msLabel writes a value of the scale: "0", "500 ms", "2 s".
func msLabel(ms int64) string {
	switch {
	case ms == 0:
		return "0"
	case ms >= 1000 && ms%1000 == 0:
		return strconv.FormatInt(ms/1000, 10) + " s"
	case ms >= 1000:
		return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64) + " s"
	}
	return strconv.FormatInt(ms, 10) + " ms"
}

// Dir is the directory of the servers' standalone strips, beside
// the badges' directories.
const Dir = "badges-strip"
