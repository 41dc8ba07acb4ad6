package record

import (
	"slices"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
)

// IncidentsLen is how many status changes a server's file keeps at most,
// newest first: a server failing and recovering every five minutes would
// otherwise gain a hundred a day.
const IncidentsLen = 500

// IncidentKeep is how long a status change is kept after it ended.
const IncidentKeep = 366 * 24 * time.Hour

// Span is one status of a server over time, as summary keeps it: oldest
// first, each ending where the next starts.
type Span struct {
	Status data.Outcome
	From   data.Outcome
	Detail string
	Start  int64 // Unix ms
	End    int64 // Unix ms; 0 while it lasts
}

// setPaused opens a paused Span at now when the server is paused and the
// last Span is not, and ends it at now when the server is no longer
// paused. A pause is the one status the Parquet history cannot tell: it is
// kept from the files published before.
func (s *Summary) setPaused(paused bool, now time.Time) {
	last := len(s.Spans) - 1
	open := last >= 0 && s.Spans[last].Status == data.Paused && s.Spans[last].End == 0
	switch {
	case paused && !open:
		var from data.Outcome
		if last >= 0 {
			from = s.Spans[last].Status
			s.Spans[last].End = now.UnixMilli()
		}
		s.Spans = append(s.Spans, Span{Status: data.Paused, From: from, Start: now.UnixMilli()})
	case !paused && open:
		s.Spans[last].End = now.UnixMilli()
	}
}

// DeriveSpans recomputes the spans from the time the checks are complete
// on (s.Complete): the spans that started before are kept as published,
// the later ones derived from the checks, one new Span for each check whose
// status differs from the one before, pauses kept where they were. So a
// rebuild from the Parquet history (Complete: the oldest result read)
// gives the spans an incremental run gives.
func (s *Summary) DeriveSpans() {
	var out []Span
	var pauses []Span
	for _, sp := range s.Spans {
		switch {
		case sp.Start < s.Complete:
			out = append(out, sp)
		case sp.Status == data.Paused:
			pauses = append(pauses, sp)
		}
	}
	if n := len(out); n > 0 && out[n-1].Status != data.Paused {
		out[n-1].End = 0 // rederived from the next change
	}
	cur := func() *Span {
		if len(out) == 0 {
			return nil
		}
		return &out[len(out)-1]
	}
	open := func(sp Span) {
		if c := cur(); c != nil {
			if c.End == 0 {
				c.End = sp.Start
			}
			sp.From = c.Status
		}
		sp.End = 0
		out = append(out, sp)
	}
	checks := s.Checks[firstAt(s.Checks, s.Complete):]
	for len(checks) > 0 || len(pauses) > 0 {
		if len(pauses) > 0 && (len(checks) == 0 || pauses[0].Start <= checks[0].At) {
			p := pauses[0]
			pauses = pauses[1:]
			end := p.End
			open(p)
			cur().End = end
			continue
		}
		c := checks[0]
		checks = checks[1:]
		if last := cur(); last != nil && last.Status == data.Paused && (last.End == 0 || c.At < last.End) {
			continue // a check planned before the pause was seen
		}
		if last := cur(); last == nil || last.Status != c.Status || last.End != 0 {
			open(Span{Status: c.Status, Detail: c.Detail, Start: c.At})
		}
	}
	s.Spans = out
}

// firstAt returns the index of the first check at or after t.
func firstAt(checks []PastCheck, t int64) int {
	i, _ := slices.BinarySearchFunc(checks, t, func(c PastCheck, t int64) int { return cmpInt(c.At, t) })
	return i
}

// PruneSpans drops the spans that ended more than incidentKeep before now,
// and all but the last IncidentsLen.
func (s *Summary) PruneSpans(now time.Time) {
	from := now.Add(-IncidentKeep).UnixMilli()
	drop := 0
	for drop < len(s.Spans) && s.Spans[drop].End != 0 && s.Spans[drop].End < from {
		drop++
	}
	drop = max(drop, len(s.Spans)-IncidentsLen)
	if drop > 0 {
		s.Spans = slices.Delete(s.Spans, 0, drop)
	}
}

// incidents returns the spans as published: newest first.
func (s *Summary) incidents() []Incident {
	out := make([]Incident, 0, len(s.Spans))
	for i := len(s.Spans) - 1; i >= 0; i-- {
		sp := s.Spans[i]
		in := Incident{Status: sp.Status, Label: sp.Status.Label(), From: orNull(sp.From), Detail: orNull(sp.Detail), Start: Time{time.UnixMilli(sp.Start).UTC()}}
		if sp.End != 0 {
			in.End = TimePtr(time.UnixMilli(sp.End))
			d := (sp.End - sp.Start) / 1000
			in.DurationSeconds = &d
		}
		out = append(out, in)
	}
	return out
}

// spansOf reads the spans back from a published file's incidents.
func spansOf(in []Incident) []Span {
	out := make([]Span, 0, len(in))
	for i := len(in) - 1; i >= 0; i-- {
		x := in[i]
		sp := Span{Status: x.Status, From: ValueOf(x.From), Detail: ValueOf(x.Detail), Start: x.Start.UnixMilli()}
		if x.End != nil {
			sp.End = x.End.UnixMilli()
		}
		out = append(out, sp)
	}
	return out
}

// ApplyPauses sets the pauses of s from the record: every recorded change
// when s is new (a rebuild, or its file was lost), then the current one at
// the time it was recorded.
func (s *Summary) ApplyPauses(changes []lists.PauseChange, paused, fresh bool, now time.Time) {
	if fresh {
		for _, c := range changes {
			s.setPaused(c.Paused, c.At)
		}
	}
	if n := len(changes); n > 0 && changes[n-1].Paused == paused {
		now = changes[n-1].At
	}
	s.setPaused(paused, now)
}
