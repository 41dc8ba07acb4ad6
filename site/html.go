package site

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"strings"
	"time"

	"plug.directory/prober/data"
)

//go:embed templates/*.html.tmpl
var htmlFiles embed.FS

var htmlFuncs = template.FuncMap{
	"label": func(o data.Outcome) string { return o.Label() },
	"when": func(t *time.Time) string {
		if t == nil {
			return "never"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"percent": func(p *float64) string {
		if p == nil {
			return "no counted checks"
		}
		return fmt.Sprintf("%.2f %%", *p)
	},
	"duration": func(s int64) string { return (time.Duration(s) * time.Second).String() },
}

var htmlTmpl = template.Must(template.New("").Funcs(htmlFuncs).ParseFS(htmlFiles, "templates/*.html.tmpl"))

// serverPage is what the page of one server shows: its published file, and
// the way back to the top of the site.
type serverPage struct {
	ServerFile
	Up   string // relative path to the top of the site: "../", "../../" for an id with a slash
	Base string // the file name of the server's JSON, without .json
}

// serverHTML renders servers/<id>.html from the published bytes of
// servers/<id>.json, so the preview shows only what the JSON says.
func serverHTML(published []byte) ([]byte, error) {
	var f ServerFile
	if err := json.Unmarshal(published, &f); err != nil {
		return nil, fmt.Errorf("render server page: %w", err)
	}
	p := serverPage{ServerFile: f, Up: strings.Repeat("../", 1+strings.Count(f.ID, "/"))}
	p.Base = f.ID[strings.LastIndexByte(f.ID, '/')+1:]
	var buf bytes.Buffer
	if err := htmlTmpl.ExecuteTemplate(&buf, "server.html.tmpl", p); err != nil {
		return nil, fmt.Errorf("render server page %s: %w", f.ID, err)
	}
	return buf.Bytes(), nil
}

// indexPage is what index.html shows: the head of index.json.
type indexPage struct {
	IndexFile
	Cut bool // not every row is shown
}

// indexHTML renders index.html from the totals and the first rows of
// index.json.
func indexHTML(f IndexFile, cut bool) ([]byte, error) {
	var buf bytes.Buffer
	if err := htmlTmpl.ExecuteTemplate(&buf, "index.html.tmpl", indexPage{IndexFile: f, Cut: cut}); err != nil {
		return nil, fmt.Errorf("render index page: %w", err)
	}
	return buf.Bytes(), nil
}

// checksHTML renders checks.html from the text of the checks page.
func checksHTML(text []byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := htmlTmpl.ExecuteTemplate(&buf, "checks.html.tmpl", pageBlocks(text)); err != nil {
		return nil, fmt.Errorf("render checks page: %w", err)
	}
	return buf.Bytes(), nil
}
