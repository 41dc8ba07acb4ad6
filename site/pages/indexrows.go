package pages

import (
	"bytes"
	"html/template"
	"strconv"
	"strings"

	"plug.directory/prober/site/record"
)

// RowsHTML is the rows of index.html's table, one "index-row" each (in
// index.html.tmpl), written here rather than by the template engine: a
// thousand rows through it were 16 ms of every minute's publish, most of
// it calls by reflection; here they take some 2 ms (BenchmarkIndexRows).
// Each row is byte for byte what the template writes
// (TestIndexRowsAsTheTemplate): its figures and times are ours, and its
// id and texts are escaped as html/template escapes text (appendEscaped).
// A row whose status is none of data.Outcomes, or whose id has a byte no
// ranked list lets in (idPlain), which would need escaping as a link too,
// is written by the template itself.
func (p indexPage) RowsHTML() (template.HTML, error) {
	b := make([]byte, 0, len(p.Rows)*360)
	for _, r := range p.Rows {
		var err error
		if b, err = appendIndexRow(b, r); err != nil {
			return "", err
		}
	}
	return template.HTML(b), nil
}

// appendIndexRow appends the "index-row" of r to b.
func appendIndexRow(b []byte, r record.IndexRow) ([]byte, error) {
	if fast, ok := appendPlainRow(b, r); ok {
		return fast, nil
	}
	var buf bytes.Buffer
	err := htmlTmpl().ExecuteTemplate(&buf, "index-row", r)
	return append(b, buf.Bytes()...), err
}

// appendPlainRow appends the "index-row" of r to b, written here; ok is
// false, and b as it was, when r's status or id needs the template.
func appendPlainRow(b []byte, r record.IndexRow) (_ []byte, ok bool) {
	if !r.Status.Valid() || !idPlain(r.ID) {
		return b, false
	}
	b = append(b, `<tr><td class="name"><a href="servers/`...)
	b = appendEscaped(b, r.ID)
	b = append(b, `.html">`...)
	b = appendEscaped(b, r.ID)
	b = append(b, `</a></td><td><span class="st `...)
	b = appendEscaped(b, string(r.Status))
	b = append(b, `">`...)
	b = appendEscaped(b, r.Status.Label())
	b = append(b, `</span></td><td data-label="Uptime, 7 days">`...)
	b = appendEscaped(b, percentText(r.Uptime7d))
	b = append(b, `</td><td data-label="Tools">`...)
	if r.Tools != nil {
		b = strconv.AppendInt(b, int64(*r.Tools), 10)
	} else {
		b = append(b, "unknown"...)
	}
	b = append(b, `</td><td data-label="Last check" class="last">`...)
	if r.LastCheck != nil {
		b = append(b, timeHTML(*r.LastCheck)...)
	} else {
		b = append(b, "not checked yet"...)
	}
	b = append(b, `</td><td data-label="Rank">`...)
	b = strconv.AppendInt(b, int64(r.Rank), 10)
	return append(b, "</td></tr>\n"...), true
}

// idPlain reports whether id is not empty and holds only the bytes a
// ranked list lets an id have (letters, digits, '.', '_', '-', '@', '+'
// and '/'): in a link's path html/template leaves each of them as it is
// before escaping it as it escapes text.
func idPlain(id string) bool { return id != "" && onlyBytes(id, "._-@+/") }

// onlyBytes reports whether every byte of s is a letter, a digit or one
// of also.
func onlyBytes(s, also string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte(also, c) >= 0:
		default:
			return false
		}
	}
	return true
}

// appendEscaped appends s to b escaped as html/template escapes text and
// quoted attributes (escapes).
func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if e := escapes[s[i]]; e != "" {
			b = append(b, e...)
		} else {
			b = append(b, s[i])
		}
	}
	return b
}

// escapes are the bytes html/template escapes in text and quoted
// attributes, and what it writes for each.
var escapes = [256]string{0: "\uFFFD", '"': "&#34;", '&': "&amp;", '\'': "&#39;", '+': "&#43;", '<': "&lt;", '>': "&gt;"}
