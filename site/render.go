package site

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"plug.directory/prober/data"
	"plug.directory/prober/site/record"
)

// marshalFile is the one JSON format of the published files: compact (a
// million servers' files add up), fields in declaration order, a final
// newline.
func marshalFile(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return append(b, '\n'), nil
}

// rowOf returns the index row of a rendered server.
func rowOf(f record.ServerFile) record.IndexRow {
	r := record.IndexRow{ID: f.ID, Rank: f.Rank, Status: f.Status, LastCheck: f.LastCheck, Uptime7d: f.Uptime.Week.Percent}
	if lr := f.LastResult; lr != nil && lr.Status == data.Working {
		r.Tools = &lr.ToolCount
	}
	return r
}

// indexRow returns the public index row of a stored row.
func (r row) indexRow() record.IndexRow {
	ir := record.IndexRow{ID: r.ID, Rank: r.Rank, Status: r.Status}
	if r.Tools >= 0 {
		n := int(r.Tools)
		ir.Tools = &n
	}
	if r.LastCheck != 0 {
		ir.LastCheck = record.TimePtr(time.UnixMilli(r.LastCheck))
	}
	if r.Uptime7d >= 0 {
		p := float64(r.Uptime7d) / 100
		ir.Uptime7d = &p
	}
	return ir
}

// plainJSON reports whether s can be written between quotes as it is.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// appendIndexRow appends the JSON of a stored row exactly as
// json.Marshal(r.indexRow()) writes it, without its reflection: index.json
// has a row per listed server, a million of them.
func appendIndexRow(b []byte, r *row) []byte {
	b = append(b, `{"id":`...)
	if plainJSON(r.ID) {
		b = append(b, '"')
		b = append(b, r.ID...)
		b = append(b, '"')
	} else {
		q, _ := json.Marshal(r.ID)
		b = append(b, q...)
	}
	b = append(b, `,"rank":`...)
	b = strconv.AppendInt(b, int64(r.Rank), 10)
	b = append(b, `,"status":"`...)
	b = append(b, r.Status...)
	b = append(b, `","last_check":`...)
	if r.LastCheck == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = appendMilliTime(b, r.LastCheck)
		b = append(b, '"')
	}
	b = append(b, `,"uptime_7d":`...)
	if r.Uptime7d < 0 {
		b = append(b, "null"...)
	} else {
		// Hundredths as the shortest decimal, as strconv formats
		// float64(u)/100: 100, 99.5, 99.45.
		b = strconv.AppendInt(b, r.Uptime7d/100, 10)
		if f := r.Uptime7d % 100; f != 0 {
			b = append(b, '.', byte('0'+f/10))
			if f%10 != 0 {
				b = append(b, byte('0'+f%10))
			}
		}
	}
	b = append(b, `,"tools":`...)
	if r.Tools < 0 {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, r.Tools, 10)
	}
	return append(b, '}')
}

// appendMilliTime appends a Unix millisecond time as TimeLayout, as Time's
// JSON has it.
func appendMilliTime(b []byte, ms int64) []byte {
	t := time.UnixMilli(ms).UTC()
	y, mo, d := t.Date()
	if y < 1000 || y > 9999 || ms < 0 {
		return t.AppendFormat(b, record.TimeLayout)
	}
	h, mi, sec := t.Clock()
	two := func(b []byte, v int) []byte { return append(b, byte('0'+v/10), byte('0'+v%10)) }
	b = strconv.AppendInt(b, int64(y), 10)
	b = append(b, '-')
	b = two(b, int(mo))
	b = append(b, '-')
	b = two(b, d)
	b = append(b, 'T')
	b = two(b, h)
	b = append(b, ':')
	b = two(b, mi)
	b = append(b, ':')
	b = two(b, sec)
	frac := int(ms % 1000)
	return append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10), 'Z')
}

// indexHead returns index.json without its rows: the count of servers and
// the totals per status.
func indexHead(st *store) record.IndexFile {
	head := record.IndexFile{Servers: len(st.Rows)}
	counts, protocols, problems, pending := rowTotals(st)
	head.Protocols, head.ToolProblems, head.FactsPending = protocols, problems, pending
	for _, o := range data.Outcomes {
		head.Totals = append(head.Totals, record.StatusTotal{Status: o, Label: o.Label(), Count: counts[o]})
	}
	return head
}

// encodeIndex returns index.json, the head: the count of servers, the
// totals and the parts the site's record names (writeIndex), a line each.
func encodeIndex(st *store) []byte {
	head := indexHead(st)
	tb, _ := json.Marshal(head.Totals)
	pb, _ := json.Marshal(head.Protocols)
	b := make([]byte, 0, 192+len(tb)+len(pb)+len(st.Meta.Index)*120)
	b = append(b, `{"servers":`...)
	b = strconv.AppendInt(b, int64(head.Servers), 10)
	b = append(b, ",\n\"totals\":"...)
	b = append(b, tb...)
	b = append(b, ",\n\"protocols\":"...)
	b = append(b, pb...)
	b = append(b, `,"tool_problems":`...)
	b = strconv.AppendInt(b, int64(head.ToolProblems), 10)
	b = append(b, `,"facts_pending":`...)
	b = strconv.AppendInt(b, int64(head.FactsPending), 10)
	b = append(b, ",\n\"parts\":["...)
	for k, part := range partsOf(st) {
		if k > 0 {
			b = append(b, ',')
		}
		pj, _ := json.Marshal(part)
		b = append(b, '\n')
		b = append(b, pj...)
	}
	return append(b, "\n]}\n"...)
}

// rowTotals returns, in one pass over every row (a million each minute),
// the count per status, the protocol totals, how many servers have tool
// problems, and how many rows' facts are not read yet.
func rowTotals(st *store) (map[data.Outcome]int, record.ProtocolTotals, int, int) {
	var t record.ProtocolTotals
	problems, pending := 0, 0
	counts, byVersion := map[data.Outcome]int{}, map[string]int{}
	for i := range st.Rows {
		r := &st.Rows[i]
		counts[r.Status]++
		switch {
		case r.Problems < 0:
			pending++
			continue
		case r.Problems > 0:
			problems++
		}
		if r.Speaks {
			t.Speaks20260728++
		}
		if r.Protocol != "" {
			byVersion[r.Protocol]++
		}
	}
	t.Versions = []record.VersionTotal{}
	for v, n := range byVersion {
		t.Versions = append(t.Versions, record.VersionTotal{Version: v, Count: n})
	}
	slices.SortFunc(t.Versions, func(a, b record.VersionTotal) int { return strings.Compare(b.Version, a.Version) })
	return counts, t, problems, pending
}

// factsBackfill is how many rows whose facts are not read yet (a site
// record of the layout before them, storeMagicV2) are rendered per run on
// top of those due anyway: a million are caught up within a working day,
// no run costing more than a few seconds more.
var factsBackfill = 2000

// backfillFacts makes candidates of up to factsBackfill rows whose facts
// are not read yet, on top of the candidates that are; once none is left
// it costs nothing more (a run saves the record only when it rendered
// every candidate).
func (p *publication) backfillFacts() {
	if !p.st.factsPending {
		return
	}
	p.st.factsPending = false
	n := 0
	for i := range p.st.Rows {
		if r := &p.st.Rows[i]; r.Problems < 0 && !p.cand[r.ID] {
			if n == factsBackfill {
				p.st.factsPending = true
				return
			}
			p.cand[r.ID] = true
			n++
		}
	}
}

// setFacts sets a row's facts from its rendered file (index.json counts
// them: its head is encoded every publish).
func (r *row) setFacts(f record.ServerFile) {
	proto, speaks, problems := "", false, int32(0)
	if p := f.Protocol; p != nil {
		proto, speaks = p.Version, p.Speaks20260728
	}
	if lr := f.LastResult; lr != nil {
		problems = int32(len(lr.ToolProblems))
	}
	r.Protocol, r.Speaks, r.Problems = proto, speaks, problems
}
