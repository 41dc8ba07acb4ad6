package record

import (
	"slices"
	"time"

	"plug.directory/prober/data"
)

// Phases is where the time of one check went, in
// milliseconds, summed over its connections; a phase the check did not go
// through is null (no lookup for an IP address, no handshake after a
// failed connect).
type Phases struct {
	DNSMS     *int64 `json:"dns_ms"`     // name lookups
	ConnectMS *int64 `json:"connect_ms"` // TCP connects
	TLSMS     *int64 `json:"tls_ms"`     // TLS handshakes
	WaitMS    *int64 `json:"wait_ms"`    // waiting for the server: each answer's first byte after its request, summed
}

// Timings are a last result's phases, with each answer's wait and the
// whole check.
type Timings struct {
	Phases
	FirstByteMS []int64 `json:"first_byte_ms"` // per answer, in the order of the requests: from the request written to its first byte
	TotalMS     int64   `json:"total_ms"`      // the whole check, as latency_ms
}

// Spread is the median and 95th percentile (nearest rank) of one phase
// over a day's answered checks, in milliseconds.
type Spread struct {
	P50 int64 `json:"p50"`
	P95 int64 `json:"p95"`
}

// DayPhases is where the time of a day's answered checks went: a Spread
// per phase, null for a phase none of them went through.
type DayPhases struct {
	DNS     *Spread `json:"dns_ms"`
	Connect *Spread `json:"connect_ms"`
	TLS     *Spread `json:"tls_ms"`
	Wait    *Spread `json:"wait_ms"`
}

// phasesOf returns the phases of a check's timings; nil for nil.
func phasesOf(t *data.Timings) *Phases {
	if t == nil {
		return nil
	}
	return &Phases{DNSMS: data.MillisOf(t.DNS), ConnectMS: data.MillisOf(t.Connect), TLSMS: data.MillisOf(t.TLS), WaitMS: data.MillisOf(t.FirstByteTotal())}
}

// timingsOf returns the published timings of a result; nil when the check
// measured nothing.
func timingsOf(r *data.Result) *Timings {
	p := phasesOf(r.Timings)
	if p == nil {
		return nil
	}
	t := &Timings{Phases: *p, FirstByteMS: []int64{}, TotalMS: r.Duration.Milliseconds()}
	for _, d := range r.Timings.FirstByte {
		t.FirstByteMS = append(t.FirstByteMS, d.Milliseconds())
	}
	return t
}

// resultTimings reads a result's timings back from its published form.
func resultTimings(t *Timings) *data.Timings {
	if t == nil {
		return nil
	}
	out := &data.Timings{DNS: data.FromMillis(t.DNSMS), Connect: data.FromMillis(t.ConnectMS), TLS: data.FromMillis(t.TLSMS)}
	for _, ms := range t.FirstByteMS {
		out.FirstByte = append(out.FirstByte, time.Duration(ms)*time.Millisecond)
	}
	return out
}

// phaseSamples gathers one day's phases, phase by phase.
type phaseSamples struct{ dns, connect, tls, wait []int64 }

func (a *phaseSamples) add(p *Phases) {
	if p == nil {
		return
	}
	for _, f := range []struct {
		v   *int64
		out *[]int64
	}{{p.DNSMS, &a.dns}, {p.ConnectMS, &a.connect}, {p.TLSMS, &a.tls}, {p.WaitMS, &a.wait}} {
		if f.v != nil {
			*f.out = append(*f.out, *f.v)
		}
	}
}

// spreads returns the day's Spread of each phase; nil when no check
// measured any.
func (a *phaseSamples) spreads() *DayPhases {
	spread := func(v []int64) *Spread {
		if len(v) == 0 {
			return nil
		}
		slices.Sort(v)
		return &Spread{P50: *nearestRank(v, 50), P95: *nearestRank(v, 95)}
	}
	d := &DayPhases{DNS: spread(a.dns), Connect: spread(a.connect), TLS: spread(a.tls), Wait: spread(a.wait)}
	if d.DNS == nil && d.Connect == nil && d.TLS == nil && d.Wait == nil {
		return nil
	}
	return d
}
