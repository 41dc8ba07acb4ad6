package site

import (
	"math"
	"slices"
	"time"

	"plug.directory/prober/data"
)

// Windows of the uptime figures.
const (
	dayWindow   = 24 * time.Hour
	weekWindow  = 7 * 24 * time.Hour
	monthWindow = 30 * 24 * time.Hour
)

// summary is what the site knows of one server's checks: its state, its
// last result, and its checks of the last 30 days (at least the last
// HistoryLen), from which the history and the uptime are computed. Between
// runs it lives in the server's published file (summaryOf reads it back)
// and, for the checks older than the file's history, in
// DATA/site/older/<id>.json.
type summary struct {
	Listed data.Server // its row of the ranked list
	// SharedWith names the other servers listed at its address
	// (data.SharedAddresses), whose checks are its checks.
	SharedWith []string
	State      data.State
	Last       *data.Result
	Checks     []pastCheck // ascending by start

	// Complete is the time from which Checks hold every check (Unix ms; 0:
	// all of them). Days and Spans from before it are kept as published;
	// from it on they are derived from Checks.
	Complete int64
	Days     []Day        // the daily series as published
	Spans    []statusSpan // its statuses over time, oldest first
	Tools    ToolDefinitions
	Badges   [4]Badge // those its published file implies (badgesOf), to write only badges that change
	// Cert is the last certificate a check saw, and
	// CertWarnings the warnings its certificates were given, oldest first.
	Cert         *certSeen
	CertWarnings []certWarning
	Proto        *protoSeen // the last handshake a check got through
}

// pastCheck is one check in a summary, kept short: a server checked hourly
// keeps some 720 of them.
type pastCheck struct {
	At        int64        `json:"t"` // start, Unix milliseconds
	Status    data.Outcome `json:"s"`
	Detail    string       `json:"r,omitempty"`
	LatencyMS *int64       `json:"l,omitempty"` // nil when no answer came (latencyOf)
	Phases    *Phases      `json:"p,omitempty"` // where its time went; nil when not measured
}

// truncMS brings a time to the history's millisecond precision in UTC, so a
// result read from a journal and the same one read from Parquet are equal.
func truncMS(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Truncate(time.Millisecond).UTC()
}

// normalize brings every time of r to millisecond precision in UTC.
func normalize(r data.Result) data.Result {
	r.Planned, r.Started, r.Finished, r.RetryAfter = truncMS(r.Planned), truncMS(r.Started), truncMS(r.Finished), truncMS(r.RetryAfter)
	r.Duration = r.Duration.Truncate(time.Millisecond)
	r.Lateness = r.Lateness.Truncate(time.Millisecond)
	return r
}

// apply folds one result into the summary and reports whether it changed
// anything. A result already folded in (same start) changes nothing, so
// reading a journal and then the Parquet part it was folded into is
// harmless. A result for another address than the summary's, newer than its
// last check, starts the summary afresh: a server whose address changed is
// new.
func (s *summary) apply(r data.Result) bool {
	r = normalize(r)
	if !s.State.LastCheck.IsZero() && r.URL != s.State.URL {
		if !r.Started.After(s.State.LastCheck) {
			return false
		}
		*s = summary{Listed: s.Listed}
	}
	at := r.Started.UnixMilli()
	i, found := slices.BinarySearchFunc(s.Checks, at, func(c pastCheck, at int64) int { return cmpInt(c.At, at) })
	if found {
		return false
	}
	s.Checks = slices.Insert(s.Checks, i, pastCheck{At: at, Status: r.Status, Detail: r.Detail, LatencyMS: latencyOf(r), Phases: phasesOf(r.Timings)})
	s.State.Apply(r)
	s.noteCert(r)
	s.noteProtocol(r)
	if s.Last == nil || r.Started.After(s.Last.Started) {
		s.Last = &r
	}
	return true
}

// prune drops checks older than the longest uptime window, keeping at least
// the last HistoryLen.
func (s *summary) prune(now time.Time) {
	from := now.Add(-monthWindow).UnixMilli()
	drop := 0
	for drop < len(s.Checks)-HistoryLen && s.Checks[drop].At <= from {
		drop++
	}
	if drop > 0 {
		s.Checks = slices.Delete(s.Checks, 0, drop)
	}
}

// counts reports whether a check of this outcome counts in uptime: only
// working, needs_key and failing do (table O).
func counts(o data.Outcome) bool { return o.Answered() || o.CountsAgainst() }

// uptime returns the uptime of the window of length w ending at now, and
// when it next changes without a new check: when its oldest counted check
// leaves the window (zero when nothing is counted).
func (s *summary) uptime(now time.Time, w time.Duration) (Uptime, time.Time) {
	var u Uptime
	var expires time.Time
	from, to := now.Add(-w).UnixMilli(), now.UnixMilli()
	for i := len(s.Checks) - 1; i >= 0 && s.Checks[i].At > from; i-- {
		c := s.Checks[i]
		if c.At > to || !counts(c.Status) {
			continue
		}
		u.Counted++
		if c.Status.Answered() {
			u.Answered++
		}
		expires = time.UnixMilli(c.At).Add(w).UTC()
	}
	u.Percent = percentOf(u.Answered, u.Counted)
	return u, expires
}

// percentOf is 100 * answered / counted to two decimals, nil when nothing
// counted: the one rounding of every uptime figure.
func percentOf(answered, counted int) *float64 {
	if counted == 0 {
		return nil
	}
	p := math.Round(10000*float64(answered)/float64(counted)) / 100
	return &p
}

// periodUptime adds up the days of a daily series: the uptime of the
// whole period the strip shows.
func periodUptime(days []Day) Uptime {
	var u Uptime
	for _, d := range days {
		u.Counted += d.Counted
		u.Answered += d.Answered
	}
	u.Percent = percentOf(u.Answered, u.Counted)
	return u
}

// summaryOf reads a summary back from a published file, without checks
// when the file shows none. It is the inverse of render for everything
// render shows; the checks older than the history are added by the caller.
func summaryOf(f ServerFile) *summary {
	s := &summary{Listed: data.Server{ID: f.ID, Rank: f.Rank, URL: valueOf(f.URL)}, Days: f.Daily, Spans: spansOf(f.Incidents), Tools: f.ToolDefs, SharedWith: f.SharedWith}
	if f.Listed != nil {
		s.Listed.Added = f.Listed.UTC()
	}
	s.Badges = badgesOf(f)
	if c := f.Certificate; c != nil {
		s.Cert = &certSeen{TLSInfo: data.TLSInfo{NotAfter: c.NotAfter.UTC(), Issuer: c.Issuer, Names: c.Names}, At: c.SeenAt.UTC()}
		if c.TLSVersion != nil {
			s.Cert.Version = *c.TLSVersion
		}
	}
	s.CertWarnings = certWarningsFrom(f, s.Cert)
	s.Proto = protoSeenOf(f.Protocol)
	if f.LastResult == nil || f.LastCheck == nil {
		return s
	}
	lr := f.LastResult
	s.State = data.State{ID: f.ID, URL: valueOf(f.URL), LastCheck: f.LastCheck.UTC(), LastStatus: lr.Status, LastDetail: valueOf(lr.Detail),
		Protocol: valueOf(lr.Protocol), Transport: valueOf(lr.Transport)}
	if f.LastAnswered != nil {
		s.State.LastAnswered = f.LastAnswered.UTC()
	}
	if f.FailingSince != nil {
		s.State.FailingSince = f.FailingSince.UTC()
	}
	s.Last = &data.Result{ID: f.ID, URL: valueOf(f.URL), Status: lr.Status, Detail: valueOf(lr.Detail), Started: lr.Started.UTC(),
		Duration: time.Duration(valueOf(lr.LatencyMS)) * time.Millisecond, HTTPStatus: valueOf(lr.HTTPStatus),
		Protocol: valueOf(lr.Protocol), Transport: valueOf(lr.Transport), ServerName: valueOf(lr.ServerName), ServerVersion: valueOf(lr.ServerVersion),
		ServerTitle: valueOf(lr.ServerTitle), ServerDescription: valueOf(lr.ServerDescription), ServerWebsite: valueOf(lr.ServerWebsite), KeyInfo: valueOf(lr.KeyInfo),
		ToolCount: lr.ToolCount, Tools: lr.Tools, Timings: resultTimings(lr.Timings), ToolProblems: lr.ToolProblems,
		Support: lr.supportFields.support()}
	for i := len(f.History) - 1; i >= 0; i-- {
		c := f.History[i]
		s.Checks = append(s.Checks, pastCheck{At: c.Started.UnixMilli(), Status: c.Status, Detail: c.Detail, LatencyMS: c.LatencyMS, Phases: c.Timings})
	}
	return s
}

// older returns the checks the published history leaves out.
func (s *summary) older() []pastCheck {
	if len(s.Checks) <= HistoryLen {
		return nil
	}
	return s.Checks[:len(s.Checks)-HistoryLen]
}

// mergeChecks merges two ascending lists of checks, dropping repeats.
func mergeChecks(a, b []pastCheck) []pastCheck {
	out := make([]pastCheck, 0, len(a)+len(b))
	out = append(out, a...)
	out = append(out, b...)
	slices.SortStableFunc(out, func(x, y pastCheck) int { return cmpInt(x.At, y.At) })
	return slices.CompactFunc(out, func(x, y pastCheck) bool { return x.At == y.At })
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
