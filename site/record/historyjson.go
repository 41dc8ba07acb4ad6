package record

import (
	"bytes"
	"encoding/json"
	"fmt"

	"plug.directory/prober/data"
)

// History is a server's latest checks, newest first, at most HistoryLen.
// In its file it is written in columns, as the daily series is: an entry
// a check in each (its start, status, reason, latency and the four
// phases of its timings), where a check was an object of 140 bytes with
// its field names: 48 checks weigh some 3 KB, where they weighed 6.7.
type History []Check

// historyColumns is a history as its file writes it. A check whose
// timings were not measured has null in each phase's column.
type historyColumns struct {
	Started []Time            `json:"started"`
	Status  []data.Outcome    `json:"status"`
	Detail  []*string         `json:"reason"` // null when the check gave none
	Latency []*int64          `json:"latency_ms"`
	Timings checkPhaseColumns `json:"timings"`
}

// checkPhaseColumns is a column a phase of the checks' timings.
type checkPhaseColumns struct {
	DNS     []*int64 `json:"dns_ms"`
	Connect []*int64 `json:"connect_ms"`
	TLS     []*int64 `json:"tls_ms"`
	Wait    []*int64 `json:"wait_ms"`
}

// MarshalJSON writes the checks in columns (historyColumns).
func (h History) MarshalJSON() ([]byte, error) {
	c := columnsOf(h)
	return c.appendJSON(make([]byte, 0, 200+130*len(h))), nil
}

// columnsOf returns the columns of the checks h.
func columnsOf(h History) historyColumns {
	n := len(h)
	c := historyColumns{Started: make([]Time, 0, n), Status: make([]data.Outcome, 0, n), Detail: make([]*string, 0, n), Latency: make([]*int64, 0, n),
		Timings: checkPhaseColumns{DNS: make([]*int64, 0, n), Connect: make([]*int64, 0, n), TLS: make([]*int64, 0, n), Wait: make([]*int64, 0, n)}}
	for _, k := range h {
		c.Started, c.Status, c.Latency = append(c.Started, k.Started), append(c.Status, k.Status), append(c.Latency, k.LatencyMS)
		var detail *string
		if k.Detail != "" {
			detail = &k.Detail
		}
		c.Detail = append(c.Detail, detail)
		p := k.Timings
		if p == nil {
			p = &Phases{}
		}
		c.Timings.DNS, c.Timings.Connect = append(c.Timings.DNS, p.DNSMS), append(c.Timings.Connect, p.ConnectMS)
		c.Timings.TLS, c.Timings.Wait = append(c.Timings.TLS, p.TLSMS), append(c.Timings.Wait, p.WaitMS)
	}
	return c
}

// UnmarshalJSON reads the checks a file wrote, a Check a check again: at
// most HistoryLen, every column as long as started. A check with null in
// each phase's column has no timings. A file of the build before, its
// checks a list of objects, reads as it did: the published file is the
// server's record (site.loadSummary), which an upgrade must not lose.
func (h *History) UnmarshalJSON(b []byte) error {
	if isList(b) {
		var rows []Check
		if err := json.Unmarshal(b, &rows); err != nil {
			return fmt.Errorf("read history: %w", err)
		}
		if len(rows) > HistoryLen {
			return fmt.Errorf("read history: %d checks, more than %d", len(rows), HistoryLen)
		}
		*h = rows
		return nil
	}
	var c historyColumns
	if !c.scan(b) {
		c = historyColumns{}
		if err := json.Unmarshal(b, &c); err != nil {
			return fmt.Errorf("read history: %w", err)
		}
	}
	return h.fromColumns(&c)
}

// fromColumns sets h to the checks of c, columns of the same length, at
// most HistoryLen.
func (h *History) fromColumns(c *historyColumns) error {
	n := len(c.Started)
	if n > HistoryLen {
		return fmt.Errorf("read history: %d checks, more than %d", n, HistoryLen)
	}
	for _, l := range []int{len(c.Status), len(c.Detail), len(c.Latency), len(c.Timings.DNS), len(c.Timings.Connect), len(c.Timings.TLS), len(c.Timings.Wait)} {
		if l != n {
			return fmt.Errorf("read history: a column of %d entries for %d checks", l, n)
		}
	}
	out := make(History, n)
	for i := range out {
		k := Check{Started: c.Started[i], Status: c.Status[i], Detail: ValueOf(c.Detail[i]), LatencyMS: c.Latency[i]}
		if p := (Phases{DNSMS: c.Timings.DNS[i], ConnectMS: c.Timings.Connect[i], TLSMS: c.Timings.TLS[i], WaitMS: c.Timings.Wait[i]}); p != (Phases{}) {
			k.Timings = &p
		}
		out[i] = k
	}
	*h = out
	return nil
}

// isList reports whether the JSON value b is a list: a history or a daily
// series as the builds before the columns wrote it.
func isList(b []byte) bool {
	t := bytes.TrimLeft(b, " \t\r\n")
	return len(t) > 0 && t[0] == '['
}
