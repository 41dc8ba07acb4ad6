package checks

import (
	"bytes"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"text/template"
)

// checksPage is the checks page, every number and label in it taken from
// the facts (rule P2). Its lines are a small subset of Markdown: "# " and
// "## " headings, "- " list items, lines indented by four spaces shown as
// code, and paragraphs, one line each.
//
//go:embed checks.txt.tmpl
var checksPage string

var pageFuncs = template.FuncMap{
	"number":    func(n any) string { return number(toInt64(n)) },
	"grouped":   func(n any) string { return Grouped(toInt64(n)) },
	"span":      func(n any) string { return span(toInt64(n)) },
	"firstSpan": func(n any) string { return firstSpan(toInt64(n)) },
	"per":       func(n any) string { return per(toInt64(n)) },
	"bytesSize": bytesSize,
	"ports": func(ports []int) string {
		s := make([]string, len(ports))
		for i, p := range ports {
			s[i] = strconv.Itoa(p)
		}
		return andList(s)
	},
}

func toInt64(n any) int64 {
	switch v := n.(type) {
	case int:
		return int64(v)
	case int64:
		return v
	}
	panic(fmt.Sprintf("not an integer: %T", n))
}

var checksTmpl = template.Must(template.New("checks").Funcs(pageFuncs).Funcs(template.FuncMap{
	"label": func(string) (string, error) { return "", nil }, // replaced per render
}).Parse(checksPage))

// Text renders the checks page from the facts p, as the text
// that checks.txt holds. It fails only when p lacks a fact the page needs.
func Text(p Probe) ([]byte, error) {
	t, err := checksTmpl.Clone()
	if err != nil {
		return nil, fmt.Errorf("render checks page: %w", err)
	}
	t.Funcs(template.FuncMap{"label": p.label})
	if len(p.Tiers) != 2 {
		return nil, fmt.Errorf("render checks page: %d tiers, the page describes 2", len(p.Tiers))
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, p); err != nil {
		return nil, fmt.Errorf("render checks page: %w", err)
	}
	return buf.Bytes(), nil
}

// Block is one block of the checks page for its HTML form.
type Block struct {
	Kind  string   // "h1", "h2", "p", "pre" or "ul"
	Text  string   // h1, h2, p
	Lines []string // pre lines, ul items
}

// Blocks splits the checks page text into its blocks.
func Blocks(text []byte) []Block {
	var out []Block
	for _, line := range strings.Split(string(text), "\n") {
		var kind, s string
		switch {
		case strings.TrimSpace(line) == "":
			continue
		case strings.HasPrefix(line, "## "):
			kind, s = "h2", line[3:]
		case strings.HasPrefix(line, "# "):
			kind, s = "h1", line[2:]
		case strings.HasPrefix(line, "- "):
			kind, s = "ul", line[2:]
		case strings.HasPrefix(line, "    "):
			kind, s = "pre", line[4:]
		default:
			kind, s = "p", line
		}
		if (kind == "ul" || kind == "pre") && len(out) > 0 && out[len(out)-1].Kind == kind {
			out[len(out)-1].Lines = append(out[len(out)-1].Lines, s)
			continue
		}
		b := Block{Kind: kind}
		if kind == "ul" || kind == "pre" {
			b.Lines = []string{s}
		} else {
			b.Text = s
		}
		out = append(out, b)
	}
	return out
}
