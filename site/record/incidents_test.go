package record

import (
	"testing"
	"time"

	"plug.directory/prober/data"
)

// fixNow is the instant the tests render at.
var fixNow = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// TestIncidentsBounded: a server that flaps every check for a year keeps
// at most IncidentsLen spans, none that ended more than a year ago.
func TestIncidentsBounded(t *testing.T) {
	t.Parallel()
	s := &Summary{}
	at := fixNow.Add(-400 * 24 * time.Hour)
	for i := range 2000 { // a flapping server, every 5 minutes, over a year ago and now
		o := []data.Outcome{data.Working, data.Failing}[i%2]
		if i == 1000 {
			at = fixNow.Add(-24 * time.Hour)
		}
		s.Checks = append(s.Checks, PastCheck{At: at.UnixMilli(), Status: o})
		at = at.Add(5 * time.Minute)
	}
	s.DeriveSpans()
	s.PruneSpans(fixNow)
	if len(s.Spans) > IncidentsLen || len(s.Spans) == 0 {
		t.Fatalf("%d spans, want at most %d", len(s.Spans), IncidentsLen)
	}
	if first := time.UnixMilli(s.Spans[0].Start); first.Before(fixNow.Add(-IncidentKeep)) {
		t.Errorf("oldest span starts %v: more than a year ago", first)
	}
}
