package pages

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/site/record"
)

// TestIndexRowsAsTheTemplate: index.html's rows written in Go are byte for
// byte what its "index-row" template writes, for every status, every byte
// an id may hold, figures absent, zero, negative and not finite; a row
// the Go cannot write (a status no check has, an id with a byte no list
// lets in, which a link would escape otherwise) is the template's own.
func TestIndexRowsAsTheTemplate(t *testing.T) {
	at := record.Time{Time: time.Date(2026, 12, 7, 21, 3, 4, 5e8, time.UTC)}
	pf := func(v float64) *float64 { return &v }
	pi := func(v int) *int { return &v }
	plain := []string{"a", "srv0000001", "Owner+Tool@v2/sub.part_x-y", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-@+/x"}
	other := []string{"", "a b", `a"b`, "a<b>&c", "it's", "é", "a%41b", "a\x00b", "javascript:alert(1)", "a?b=c#d", "a\\b"}
	uptimes := []*float64{nil, pf(99.5), pf(0), pf(100), pf(-1), pf(math.Inf(1)), pf(math.NaN())}
	tools := []*int{nil, pi(0), pi(12), pi(-3)}
	statuses := append(append([]data.Outcome{}, data.Outcomes...), "bogus", `x" onclick="y`)
	rows, fast := 0, 0
	for i, id := range append(plain, other...) {
		for j, st := range statuses {
			k := i*len(statuses) + j
			r := record.IndexRow{ID: id, Rank: 1 + k*7919, Status: st, Uptime7d: uptimes[k%len(uptimes)], Tools: tools[k%len(tools)]}
			if k%3 != 0 {
				r.LastCheck = &at
			}
			var want bytes.Buffer
			if err := htmlTmpl().ExecuteTemplate(&want, "index-row", r); err != nil {
				t.Fatal(err)
			}
			got, err := appendIndexRow([]byte("before"), r)
			if err != nil || string(got) != "before"+want.String() {
				t.Errorf("row %+v:\n got %q, %v\nwant %q", r, got, err, "before"+want.String())
			}
			_, ok := appendPlainRow(nil, r)
			if wantFast := r.Status.Valid() && idPlain(id); ok != wantFast {
				t.Errorf("row of id %q, status %q: written in Go %v, want %v", id, st, ok, wantFast)
			}
			rows++
			if ok {
				fast++
			}
		}
	}
	if fast != len(plain)*len(data.Outcomes) {
		t.Errorf("%d of %d rows written in Go, want the %d of a plain id and a status", fast, rows, len(plain)*len(data.Outcomes))
	}
}

// TestIndexPageRows: index.html holds each row once, in order, between
// its table's body tags.
func TestIndexPageRows(t *testing.T) {
	var f record.IndexFile
	for i := range 3 {
		f.Rows = append(f.Rows, record.IndexRow{ID: fmt.Sprintf("srv%d", i), Rank: i + 1, Status: data.Pending})
	}
	f.Rows[1].ID = "a b" // the template's
	page, err := Index(f, true, record.Status{})
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(page), "<tbody>\n")
	body, _, _ = strings.Cut(body, "</tbody>")
	if n := strings.Count(body, "<tr>"); n != 3 || strings.Index(body, "srv0") > strings.Index(body, "a b") || strings.Index(body, "a b") > strings.Index(body, "srv2") {
		t.Errorf("table body %q: want the 3 rows in order", body)
	}
}

// benchRows are the thousand rows of a preview's index.
func benchRows() []record.IndexRow {
	at := record.Time{Time: time.Date(2026, 12, 7, 21, 0, 0, 0, time.UTC)}
	rows := make([]record.IndexRow, 1000)
	for i := range rows {
		u, n := 99.5, 3
		last := record.Time{Time: at.Add(-time.Duration(i) * time.Minute)}
		rows[i] = record.IndexRow{ID: fmt.Sprintf("srv%07d", i), Rank: i + 1, Status: data.Outcomes[i%len(data.Outcomes)], LastCheck: &last, Uptime7d: &u, Tools: &n}
	}
	return rows
}

// BenchmarkIndexRows writes the thousand rows of a preview's index, as
// each publish with the HTML pages does; its baseline is the same rows
// through the template engine, as they were written before.
func BenchmarkIndexRows(b *testing.B) {
	p := indexPage{IndexFile: record.IndexFile{Rows: benchRows()}}
	for b.Loop() {
		if _, err := p.RowsHTML(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBaselineIndexRowsTemplate(b *testing.B) {
	rows := benchRows()
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		for _, r := range rows {
			if err := htmlTmpl().ExecuteTemplate(&buf, "index-row", r); err != nil {
				b.Fatal(err)
			}
		}
	}
}
