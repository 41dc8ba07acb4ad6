package site

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"

	"plug.directory/prober/data"
)

// Geometry of the daily strips of a server's page, in SVG user units.
const (
	barWidth  = 6
	barStep   = 8
	stripH    = 28
	sparkH    = 40
	sparkPadY = 3
)

// dayClass names how a day's bar is drawn: with the colour of table O for
// "working" when every counted check answered, "refused"'s for a day
// partly failing, "failing"'s when at most half answered; "nodata" (grey
// outline) when nothing counted, "unlisted" (dashed, faint) before the
// server was listed.
func dayClass(d Day) string {
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

// dayTitle says a day's figures, as each bar's tooltip.
func dayTitle(d Day) string {
	switch {
	case !d.Listed:
		return d.Date + ": not listed yet"
	case d.Counted == 0:
		return d.Date + ": no counted checks"
	}
	s := fmt.Sprintf("%s: %s counted, %d answered, uptime %s %%", d.Date, data.Plural(d.Counted, "check"), d.Answered, trimPercent(*d.Percent))
	if d.LatencyP50MS != nil {
		s += fmt.Sprintf(", median %d ms, p95 %d ms", *d.LatencyP50MS, *d.LatencyP95MS)
	}
	return s
}

// uptimeStrip draws the daily series as one bar a day, oldest on the left,
// each with a title giving its day and figures. Inline SVG: the preview
// needs no script.
func uptimeStrip(days []Day) template.HTML {
	b := make([]byte, 0, 200+len(days)*160)
	b = fmt.Appendf(b, `<svg class="strip" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="uptime per day, last %d days">`,
		len(days)*barStep, stripH, len(days)*barStep, stripH, len(days))
	for i, d := range days {
		// A rect a day, a thousand servers a minute: appended, not
		// formatted. Titles hold only digits, dates and fixed words.
		b = append(b, `<rect class="day `...)
		b = append(b, dayClass(d)...)
		b = append(b, `" x="`...)
		b = strconv.AppendInt(b, int64(i*barStep), 10)
		b = append(b, `" y="0" width="`+strconv.Itoa(barWidth)+`" height="`+strconv.Itoa(stripH)+`" rx="1"><title>`...)
		b = append(b, dayTitle(d)...)
		b = append(b, `</title></rect>`...)
	}
	b = append(b, `</svg>`...)
	return template.HTML(b)
}

// latencySpark draws the daily median latency as a line, broken where a
// day has no answered check, over the days of the strip, with a title
// naming the highest median.
func latencySpark(days []Day) template.HTML {
	var top int64
	for _, d := range days {
		if d.LatencyP50MS != nil && *d.LatencyP50MS > top {
			top = *d.LatencyP50MS
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="spark" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="median latency per day">`,
		len(days)*barStep, sparkH, len(days)*barStep, sparkH)
	if top == 0 {
		b.WriteString(`<title>no answered checks in these days</title></svg>`)
		return template.HTML(b.String())
	}
	fmt.Fprintf(&b, `<title>median latency per day, highest %d ms</title>`, top)
	var seg []string
	flush := func() {
		switch len(seg) {
		case 0:
		case 1: // a day alone between days without answers: a dot
			x, y, _ := strings.Cut(seg[0], ",")
			fmt.Fprintf(&b, `<circle class="dot" cx="%s" cy="%s" r="1.5"/>`, x, y)
		default:
			fmt.Fprintf(&b, `<polyline class="latency" points="%s"/>`, strings.Join(seg, " "))
		}
		seg = nil
	}
	for i, d := range days {
		if d.LatencyP50MS == nil {
			flush()
			continue
		}
		x := i*barStep + barWidth/2
		y := float64(sparkH-sparkPadY) - float64(sparkH-2*sparkPadY)*float64(*d.LatencyP50MS)/float64(top)
		seg = append(seg, fmt.Sprintf("%d,%.1f", x, y))
	}
	flush()
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
