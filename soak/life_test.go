package soak

import (
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/runner/fleet"
)

// down is a phase in which the server answers every request 500: an outage.
const down = fleet.Broken

// phase is what a server is from a moment of its life on.
type phase struct {
	at    float64    // from this fraction of the run on
	kind  fleet.Kind // how it answers; down for an outage
	tools []string   // the tools of a go-sdk server; nil: one, "hello"
}

// span is a stretch of the run, in fractions of it; to 0 means to its end.
type span struct{ from, to float64 }

// life is one server's life over the run.
type life struct {
	id     string
	phases []phase // by at, the first at 0
	listed []span  // when the ranked list holds it; nil: always
	paused []span  // when the paused list names it
	// certEnd, when not 0, is when its first certificate expires (a
	// fraction of the run); it is renewed a day before, valid a year.
	certEnd float64
}

// lives is the table: every server of the run and what happens to it. A
// fraction of the run places each event, so the ten days of go test and
// the 120 days of make soak tell the same story.
var lives = []life{
	{id: "always-up", phases: []phase{{0, fleet.Modern, nil}}},
	{id: "outage", phases: []phase{{0, fleet.Streamable, nil}, {0.3, down, nil}, {0.45, fleet.Streamable, nil}}},
	{id: "protocol-move", phases: []phase{{0, fleet.Streamable, nil}, {0.25, fleet.Modern, nil}}},
	{id: "transport-move", phases: []phase{{0, fleet.LegacySSE, nil}, {0.35, fleet.Streamable, nil}}},
	{id: "certificate", phases: []phase{{0, fleet.Modern, nil}}, certEnd: 0.5},
	{id: "tools", phases: []phase{{0, fleet.Modern, []string{"alpha"}}, {0.2, fleet.Modern, []string{"alpha", "beta"}},
		{0.4, fleet.Modern, []string{"beta", "gamma"}}, {0.7, fleet.Modern, []string{"gamma"}}}},
	{id: "paused", phases: []phase{{0, fleet.Modern, nil}}, paused: []span{{0.3, 0.5}}},
	{id: "relisted", phases: []phase{{0, fleet.Modern, nil}}, listed: []span{{0, 0.4}, {0.6, 0}}},
	{id: "late", phases: []phase{{0, fleet.Streamable, nil}}, listed: []span{{0.15, 0}}},
	{id: "needs-key", phases: []phase{{0, fleet.NeedsKey, nil}}},
	{id: "rate-limited", phases: []phase{{0, fleet.RateLimited, nil}}},
}

// outcome is the status a check of kind k reads.
func outcome(k fleet.Kind) data.Outcome {
	switch k {
	case fleet.Modern, fleet.Streamable, fleet.LegacySSE:
		return data.Working
	case fleet.NeedsKey:
		return data.NeedsKey
	case fleet.RateLimited:
		return data.Refused
	}
	return data.Failing
}

// run places the table on the clock: the run's start and length.
type run struct {
	start  time.Time
	length time.Duration
	hourly bool // the servers' ranks are of the hourly tier, else of the daily
}

// cadence is the servers' usual pace.
func (r run) cadence() time.Duration {
	if r.hourly {
		return data.HourlyCadence
	}
	return data.DailyCadence
}

func (r run) at(f float64) time.Time {
	return r.start.Add(time.Duration(f * float64(r.length))).Truncate(time.Minute)
}

// phaseAt returns the phase of l at t.
func (r run) phaseAt(l life, t time.Time) phase {
	p := l.phases[0]
	for _, q := range l.phases[1:] {
		if !t.Before(r.at(q.at)) {
			p = q
		}
	}
	return p
}

func (r run) in(spans []span, t time.Time, none bool) bool {
	if spans == nil {
		return none
	}
	for _, s := range spans {
		if !t.Before(r.at(s.from)) && (s.to == 0 || t.Before(r.at(s.to))) {
			return true
		}
	}
	return false
}

func (r run) listedAt(l life, t time.Time) bool { return r.in(l.listed, t, true) }
func (r run) pausedAt(l life, t time.Time) bool { return r.in(l.paused, t, false) }

// events returns the moments the lists change: the minutes the run must
// plan and publish whatever else is due.
func (r run) events() []time.Time {
	var ev []time.Time
	for _, l := range lives {
		for _, s := range append(append([]span(nil), l.listed...), l.paused...) {
			ev = append(ev, r.at(s.from))
			if s.to != 0 {
				ev = append(ev, r.at(s.to))
			}
		}
	}
	return ev
}
