package record

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"plug.directory/prober/data"
)

// Windows of the uptime figures.
const (
	dayWindow   = 24 * time.Hour
	weekWindow  = 7 * 24 * time.Hour
	MonthWindow = 30 * 24 * time.Hour
)

// Summary is what the site knows of one server's checks: its state, its
// last result, and its checks of the last 30 days (at least the last
// HistoryLen), from which the history and the uptime are computed. Between
// runs it lives in the server's published file (SummaryOf reads it back)
// and, once its checks are more than the file's history holds, in the
// site's older checks (DATA/site/older/<id>.bin), which hold them all.
type Summary struct {
	Listed data.Server // its row of the ranked list
	// SharedWith names the other servers listed at its address
	// (data.SharedAddresses), whose checks are its checks.
	SharedWith []string
	State      data.State
	Last       *data.Result
	Checks     []PastCheck // ascending by start

	// Complete is the time from which Checks hold every check (Unix ms; 0:
	// all of them). Days and Spans from before it are kept as published;
	// from it on they are derived from Checks.
	Complete int64
	// newFrom is the start of the earliest check Apply added since the
	// summary was read with its days as published (KeepPublishedDays),
	// math.MaxInt64 while none; 0 when not so read.
	newFrom int64
	Days    []Day  // the daily series as published
	Spans   []Span // its statuses over time, oldest first
	Tools   ToolDefinitions
	// Cert is the last certificate a check saw, and
	// CertWarnings the warnings its certificates were given, oldest first.
	Cert         *certSeen
	CertWarnings []certWarning
	Proto        *protoSeen // the last handshake a check got through
}

// PastCheck is one check in a summary, kept short: a server checked hourly
// keeps some 720 of them.
type PastCheck struct {
	At        int64        `json:"t"` // start, Unix milliseconds
	Status    data.Outcome `json:"s"`
	Detail    string       `json:"r,omitempty"`
	LatencyMS *int64       `json:"l,omitempty"` // nil when no answer came (latencyOf)
	Phases    *Phases      `json:"p,omitempty"` // where its time went; nil when not measured
}

// TruncMS brings a time to the history's millisecond precision in UTC, so a
// result read from a journal and the same one read from Parquet are equal.
func TruncMS(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Truncate(time.Millisecond).UTC()
}

// normalize brings every time of r to millisecond precision in UTC.
func normalize(r data.Result) data.Result {
	r.Planned, r.Started, r.Finished, r.RetryAfter = TruncMS(r.Planned), TruncMS(r.Started), TruncMS(r.Finished), TruncMS(r.RetryAfter)
	r.Duration = r.Duration.Truncate(time.Millisecond)
	r.Lateness = r.Lateness.Truncate(time.Millisecond)
	return r
}

// Apply folds one result into the summary and reports whether it changed
// anything. A result already folded in (same start) changes nothing, so
// reading a journal and then the Parquet part it was folded into is
// harmless. A result for another address than the summary's, newer than its
// last check, starts the summary afresh: a server whose address changed is
// new.
func (s *Summary) Apply(r data.Result) bool {
	r = normalize(r)
	if !s.State.LastCheck.IsZero() && r.URL != s.State.URL {
		if !r.Started.After(s.State.LastCheck) {
			return false
		}
		*s = Summary{Listed: s.Listed}
	}
	at := r.Started.UnixMilli()
	i, found := slices.BinarySearchFunc(s.Checks, at, func(c PastCheck, at int64) int { return cmpInt(c.At, at) })
	if found {
		return false
	}
	s.Checks = slices.Insert(s.Checks, i, PastCheck{At: at, Status: r.Status, Detail: r.Detail, LatencyMS: latencyOf(r), Phases: phasesOf(r.Timings)})
	s.newFrom = min(s.newFrom, at)
	s.State.Apply(r)
	s.noteCert(r)
	s.noteProtocol(r)
	if s.Last == nil || r.Started.After(s.Last.Started) {
		s.Last = &r
	}
	return true
}

// KeepPublishedDays notes that the summary was read from its server's
// published file and older checks, which hold every check its daily series
// was counted from: until Apply adds a check the days are kept as
// published, and from the day of the earliest one it adds on they are
// counted again. A summary started afresh (a new address) counts them all.
func (s *Summary) KeepPublishedDays() { s.newFrom = math.MaxInt64 }

// Prune drops checks older than the longest uptime window, keeping at least
// the last HistoryLen.
func (s *Summary) Prune(now time.Time) {
	from := now.Add(-MonthWindow).UnixMilli()
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
func (s *Summary) uptime(now time.Time, w time.Duration) (Uptime, time.Time) {
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
	u.Percent = PercentOf(u.Answered, u.Counted)
	return u, expires
}

// PercentOf is 100 * answered / counted to two decimals, nil when nothing
// counted: the one rounding of every uptime figure.
func PercentOf(answered, counted int) *float64 {
	if counted == 0 {
		return nil
	}
	p := math.Round(10000*float64(answered)/float64(counted)) / 100
	return &p
}

// PeriodUptime adds up the days of a daily series: the uptime of the
// whole period the strip shows.
func PeriodUptime(days []Day) Uptime {
	var u Uptime
	for _, d := range days {
		u.Counted += d.Counted
		u.Answered += d.Answered
	}
	u.Percent = PercentOf(u.Answered, u.Counted)
	return u
}

// SummaryOf reads a summary back from a published file, without checks
// when the file shows none. It is the inverse of render for everything
// render shows; the checks older than the history are added by the caller.
func SummaryOf(f ServerFile) *Summary {
	s := &Summary{Listed: data.Server{ID: f.ID, Rank: f.Rank, URL: ValueOf(f.URL)}, Days: f.Daily, Spans: spansOf(f.Incidents), Tools: f.ToolDefs, SharedWith: f.SharedWith}
	if f.Listed != nil {
		s.Listed.Added = f.Listed.UTC()
	}
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
	s.State = data.State{ID: f.ID, URL: ValueOf(f.URL), LastCheck: f.LastCheck.UTC(), LastStatus: lr.Status, LastDetail: ValueOf(lr.Detail),
		Protocol: ValueOf(lr.Protocol), Transport: ValueOf(lr.Transport)}
	if f.LastAnswered != nil {
		s.State.LastAnswered = f.LastAnswered.UTC()
	}
	if f.FailingSince != nil {
		s.State.FailingSince = f.FailingSince.UTC()
	}
	s.Last = &data.Result{ID: f.ID, URL: ValueOf(f.URL), Status: lr.Status, Detail: ValueOf(lr.Detail), Started: lr.Started.UTC(),
		Duration: time.Duration(ValueOf(lr.LatencyMS)) * time.Millisecond, HTTPStatus: ValueOf(lr.HTTPStatus),
		Protocol: ValueOf(lr.Protocol), Transport: ValueOf(lr.Transport), ServerName: ValueOf(lr.ServerName), ServerVersion: ValueOf(lr.ServerVersion),
		ServerTitle: ValueOf(lr.ServerTitle), ServerDescription: ValueOf(lr.ServerDescription), ServerWebsite: ValueOf(lr.ServerWebsite), KeyInfo: ValueOf(lr.KeyInfo),
		ToolCount: lr.ToolCount, Tools: lr.Tools, Timings: resultTimings(lr.Timings), ToolProblems: lr.ToolProblems,
		Support: lr.supportFields.support()}
	for i := len(f.History) - 1; i >= 0; i-- {
		c := f.History[i]
		s.Checks = append(s.Checks, PastCheck{At: c.Started.UnixMilli(), Status: c.Status, Detail: c.Detail, LatencyMS: c.LatencyMS, Phases: c.Timings})
	}
	return s
}

// MergeChecks merges two ascending lists of checks, dropping repeats (the
// first list's check wins): a server's older checks, which hold its
// history's too, and its history. A list out of order (damage that still
// decoded) is sorted first.
func MergeChecks(a, b []PastCheck) []PastCheck {
	byStart := func(x, y PastCheck) int { return cmpInt(x.At, y.At) }
	out := make([]PastCheck, 0, len(a)+len(b))
	if !slices.IsSortedFunc(a, byStart) || !slices.IsSortedFunc(b, byStart) {
		out = append(append(out, a...), b...)
		slices.SortStableFunc(out, byStart)
	} else {
		for len(a) > 0 || len(b) > 0 {
			switch {
			case len(b) == 0 || len(a) > 0 && a[0].At <= b[0].At:
				out, a = append(out, a[0]), a[1:]
			default:
				out, b = append(out, b[0]), b[1:]
			}
		}
	}
	return slices.CompactFunc(out, func(x, y PastCheck) bool { return x.At == y.At })
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

// TrimPercent writes a percentage, as every output does, with at most two decimals and no
// trailing zeros: 100, 99.5, 99.95.
func TrimPercent(p float64) string {
	s := strings.TrimRight(fmt.Sprintf("%.2f", p), "0")
	return strings.TrimSuffix(s, ".")
}
