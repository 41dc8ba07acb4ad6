package site

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"plug.directory/prober/internal/testutil"
	"plug.directory/prober/site/badge"
	"plug.directory/prober/site/record"
	"plug.directory/prober/site/strip"
)

// svgElement is an element of an SVG document and its attributes.
type svgElement struct {
	Name  string
	Attrs map[string]string
}

// mustSVGElements parses b as a well-formed XML document and returns its
// elements in document order.
func mustSVGElements(t *testing.T, b []byte) []svgElement {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	var out []svgElement
	depth := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			depth++
			el := svgElement{Name: e.Name.Local, Attrs: map[string]string{}}
			for _, a := range e.Attr {
				el.Attrs[a.Name.Local] = a.Value
			}
			if depth == 1 && (e.Name.Local != "svg" || e.Name.Space != "http://www.w3.org/2000/svg") {
				t.Fatalf("root element {%s}%s, want an svg of the SVG namespace", e.Name.Space, e.Name.Local)
			}
			out = append(out, el)
		case xml.EndElement:
			depth--
		}
	}
	return out
}

// svgPath is a path of a strip (appendBars).
type svgPath struct {
	Class string `xml:"class,attr"`
	Fill  string `xml:"fill,attr"`
	D     string `xml:"d,attr"`
}

// pathsOf returns the paths among els.
func pathsOf(els []svgElement) []svgPath {
	var ps []svgPath
	for _, el := range els {
		if el.Name == "path" {
			ps = append(ps, svgPath{Class: el.Attrs["class"], Fill: el.Attrs["fill"], D: el.Attrs["d"]})
		}
	}
	return ps
}

// dayBars returns, for each of days days, the path of class "day ..."
// that draws its bar: a subpath "M<x> 0h<w>v28h-<w>z" draws a run of
// bars, one every BarStep from x = day * BarStep to the run's last bar,
// BarWidth wide. The test fails when a day has no bar or two.
func dayBars(t *testing.T, paths []svgPath, days int) []svgPath {
	t.Helper()
	bars := make([]svgPath, days)
	run := regexp.MustCompile(`^(\d+) 0h(\d+)v` + strconv.Itoa(strip.Height) + `h-(\d+)z$`)
	for _, p := range paths {
		if !strings.HasPrefix(p.Class, "day ") {
			continue
		}
		for _, sub := range strings.Split(p.D, "M")[1:] {
			m := run.FindStringSubmatch(sub)
			if m == nil || m[2] != m[3] {
				t.Fatalf("path %q: subpath M%s is no run of bars", p.D, sub)
			}
			x, _ := strconv.Atoi(m[1])
			w, _ := strconv.Atoi(m[2])
			n := (w + strip.BarStep - strip.BarWidth) / strip.BarStep
			if x%strip.BarStep != 0 || n < 1 || n*strip.BarStep-(strip.BarStep-strip.BarWidth) != w || x/strip.BarStep+n > days {
				t.Fatalf("path %q: subpath M%s is no run of bars", p.D, sub)
			}
			for day := x / strip.BarStep; day < x/strip.BarStep+n; day++ {
				if bars[day].Class != "" {
					t.Fatalf("day %d has two bars", day)
				}
				bars[day] = p
			}
		}
	}
	for i, b := range bars {
		if b.Class == "" {
			t.Fatalf("day %d has no bar", i)
		}
	}
	return bars
}

// TestStripFile: each server's 90-day
// strip is published as badges-strip/<id>.svg, an SVG document that
// stands alone (well-formed, no stylesheet, a fill written on every
// element that paints), whose bars are those of its page; the server's
// JSON and page give the Markdown and HTML that embed it.
func TestStripFile(t *testing.T) {
	t.Parallel()
	f := month(t)
	for _, srv := range fixServers {
		t.Run(srv.ID, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(f.out, "badges-strip", srv.ID+".svg"))
			if err != nil {
				t.Fatal(err)
			}
			sf := readServerFile(t, f, srv.ID)
			els := mustSVGElements(t, b)
			for _, el := range els {
				switch el.Name {
				case "style", "link", "script", "image", "use", "foreignObject":
					t.Errorf("a standalone strip holds a <%s>", el.Name)
				case "rect", "text", "path", "line", "circle":
					if el.Attrs["fill"] == "" || el.Attrs["style"] != "" {
						t.Errorf("<%s %v>: no inline fill", el.Name, el.Attrs)
					}
				}
			}
			if len(sf.Daily) != record.DailyLen {
				t.Fatalf("%d days, want %d", len(sf.Daily), record.DailyLen)
			}
			bars := dayBars(t, pathsOf(els), record.DailyLen)
			for i, d := range sf.Daily {
				class := strip.DayClass(d)
				pattern := `<pattern id="day-` + class + `" width="8" height="28" patternUnits="userSpaceOnUse"><path ` + strip.DayPaint[class] + ` d="`
				if bars[i].Class != "day "+class || bars[i].Fill != "url(#day-"+class+")" || !strings.Contains(string(b), pattern) {
					t.Errorf("bar %d (%s): class %q, fill %q; want day %s, filled with a pattern of its paint, %s", i, d.Date, bars[i].Class, bars[i].Fill, class, strip.DayPaint[class])
				}
			}
			root := els[0].Attrs
			if root["width"] == "" || root["height"] == "" || root["viewBox"] == "" {
				t.Errorf("root %v: want a width, a height and a viewBox (an <img> needs its size)", root)
			}
			text := string(b)
			if !strings.Contains(text, ">"+sf.Daily[0].Date+"<") || !strings.Contains(text, ">"+sf.Daily[record.DailyLen-1].Date+"<") || !strings.Contains(text, "90 days: ") {
				t.Errorf("the strip does not say its first and last days and the period's uptime:\n%.400s", text)
			}
			// Its file names the strip; its page shows the snippets that
			// embed it, which the file leaves to a site build.
			l := badge.LinksOf(srv.ID)
			url := record.SiteURL + "/badges-strip/" + srv.ID + ".svg"
			if sf.Badges.Strip != "badges-strip/"+srv.ID+".svg" || sf.Badges.StripMarkdown != "" || !strings.Contains(l.StripMarkdown, "("+url+")") || !strings.Contains(l.StripHTML, `src="`+url+`"`) {
				t.Errorf("badges %+v, snippets %+v: want the strip's path in the file and the snippets that embed %s", sf.Badges, l, url)
			}
			page, err := os.ReadFile(filepath.Join(f.out, "servers", srv.ID+".html"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{l.StripMarkdown, strings.ReplaceAll(strings.ReplaceAll(l.StripHTML, "<", "&lt;"), ">", "&gt;"), `<img src="../badges-strip/` + srv.ID + `.svg"`} {
				if !strings.Contains(strings.ReplaceAll(string(page), "&#34;", `"`), want) {
					t.Errorf("the page does not show %s", want)
				}
			}
		})
	}
}

// TestStripFileInBrowser renders alpha's strip file alone, as an <img> on
// a page of another colour, in headless Chromium, and reads the colours
// back from the screenshot: its newest day green, the day a month ago it
// mostly failed red, a day without checks white, not the black an SVG
// styled by a page's CSS turns into as an image.
func TestStripFileInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Chromium (about 2 s): full mode only, make test runs it")
	}
	br := testutil.MustBrowser(t)
	f := month(t)
	dir := filepath.Join(f.out, "badges-strip")
	page := filepath.Join(dir, "img.html")
	if err := os.WriteFile(page, []byte(`<!doctype html><body style="margin:0;background:#f0f"><img src="alpha.svg" style="display:block"></body>`), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(t.TempDir(), "strip.png")
	if err := br.Open(page, 800, 600); err != nil {
		t.Fatal(err)
	}
	if err := br.Screenshot(shot, 0); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	sf := readServerFile(t, f, srvWorking.ID)
	pixel := func(day int) [3]uint8 {
		c := img.At(img.Bounds().Min.X+day*strip.BarStep+strip.BarWidth/2, img.Bounds().Min.Y+strip.Height/2)
		r, g, bl, _ := c.RGBA()
		return [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8)}
	}
	near := func(got, want [3]uint8) bool {
		for i := range got {
			if d := int(got[i]) - int(want[i]); d < -12 || d > 12 {
				return false
			}
		}
		return true
	}
	for _, c := range []struct {
		day  int
		want [3]uint8
	}{
		{record.DailyLen - 1, [3]uint8{0x2a, 0x8a, 0x2a}},      // working
		{record.DailyLen - 1 - 12, [3]uint8{0xc0, 0x39, 0x2b}}, // failing
		{0, [3]uint8{0xff, 0xff, 0xff}},                        // no checks: white inside a grey outline
	} {
		got := pixel(c.day)
		if class := strip.DayClass(sf.Daily[c.day]); !near(got, c.want) {
			t.Errorf("day %d (%s, %s) rendered #%02x%02x%02x, want about #%02x%02x%02x", c.day, sf.Daily[c.day].Date, class, got[0], got[1], got[2], c.want[0], c.want[1], c.want[2])
		}
	}
}
