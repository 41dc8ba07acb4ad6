package record

import (
	"encoding/json"
	"testing"
	"time"

	"plug.directory/prober/data"
)

// benchColumns returns a full history and a full daily series, every
// check and day measured: the columns of a server checked hourly for
// the 90 days of its series.
func benchColumns() (History, DailySeries) {
	h := make(History, HistoryLen)
	from := time.Date(2026, 12, 6, 23, 0, 0, 0, time.UTC)
	for i := range h {
		lat, dns, con, tls, wait := int64(100+i), int64(2), int64(20+i%7), int64(40+i%11), int64(30+i)
		h[i] = Check{Started: Time{from.Add(-time.Duration(i)*time.Hour + time.Duration(i)*time.Millisecond)}, Status: data.Working, LatencyMS: &lat,
			Timings: &Phases{DNSMS: &dns, ConnectMS: &con, TLSMS: &tls, WaitMS: &wait}}
		if i%10 == 9 {
			h[i].Status, h[i].Detail, h[i].LatencyMS, h[i].Timings = data.Failing, "connection refused", nil, nil
		}
	}
	d := make(DailySeries, DailyLen)
	day := time.Date(2026, 9, 8, 0, 0, 0, 0, time.UTC)
	for i := range d {
		p50, p95 := int64(120+i), int64(480+3*i)
		pct := PercentOf(23, 24)
		d[i] = Day{Date: day.AddDate(0, 0, i).Format(time.DateOnly), Listed: true, Counted: 24, Answered: 23, Percent: pct,
			LatencyP50MS: &p50, LatencyP95MS: &p95, Phases: &DayPhases{DNS: &Spread{1, 4}, Connect: &Spread{20, 61}, TLS: &Spread{41, 90}, Wait: &Spread{30 + int64(i), 200}}}
	}
	return h, d
}

// BenchmarkColumns writes and reads by hand (columns.go) the columns of a
// full history and daily series, the bulk of a server's file, which each
// publish reads back and writes again; BenchmarkBaselineColumns does the
// same with encoding/json, as before.
func BenchmarkColumns(b *testing.B) { benchColumnCodecs(b, true) }

func BenchmarkBaselineColumns(b *testing.B) { benchColumnCodecs(b, false) }

func benchColumnCodecs(b *testing.B, hand bool) {
	h, d := benchColumns()
	hc, dc := columnsOf(h), dailyColumnsOf(d)
	for _, c := range []struct {
		name  string
		v     any
		write func([]byte) []byte
		scan  func([]byte) bool
		back  func() any
	}{
		{"history", hc, hc.appendJSON, func(b []byte) bool { var c historyColumns; return c.scan(b) }, func() any { return new(historyColumns) }},
		{"daily", dc, dc.appendJSON, func(b []byte) bool { var c dailyColumns; return c.scan(b) }, func() any { return new(dailyColumns) }},
	} {
		enc := c.write(nil)
		b.Run("write/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				if hand {
					c.write(nil)
				} else if _, err := json.Marshal(c.v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("read/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				if hand {
					if !c.scan(enc) {
						b.Fatal("not read by hand")
					}
				} else if err := json.Unmarshal(enc, c.back()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
