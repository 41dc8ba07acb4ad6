package record

import (
	"time"

	"plug.directory/prober/data"
)

// Listing is what the site knows of a server apart from its checks.
type Listing struct {
	Server   data.Server
	Paused   bool
	PlanNext time.Time     // next start a plan file names; zero when none
	EffCad   time.Duration // cadence its host's caps stretch it to; 0 when not stretched
	// SharedWith names the other servers listed at its address.
	SharedWith []string
}

// tierName names the tier of a rank (rule S1).
func tierName(rank int) string {
	if data.Tier(rank) == data.HourlyCadence {
		return "hourly"
	}
	return "daily"
}

// era names the handshake a server's protocol calls for (rule N4).
func era(protocol, transport string) string {
	switch {
	case transport == data.TransportSSE:
		return "legacy_sse"
	case protocol == "":
		return ""
	case protocol >= data.DiscoverProtocolVersion:
		return "discover"
	}
	return "initialize"
}

func TimePtr(t time.Time) *Time {
	if t.IsZero() {
		return nil
	}
	return &Time{t.UTC()}
}

// estimateNext returns when the rules would next check a server whose state
// is st and whose pace is cadence: five minutes after a failure while the
// streak is younger than an hour and the server has answered before (rules
// S6, S7), else one cadence after the last check.
func estimateNext(st data.State, cadence time.Duration) time.Time {
	if st.LastCheck.IsZero() {
		return time.Time{}
	}
	if st.LastStatus == data.Failing && st.EverAnswered() {
		if next := st.LastCheck.Add(data.RetryAfterFailure); next.Before(st.FailingSince.Add(data.RetryWindow)) {
			return next
		}
	}
	return st.LastCheck.Add(cadence)
}

// ServerFileOf builds the file of one server at now from what is listed and its
// summary (nil when it was never checked), and tells when the file next
// changes without new input (zero: not before new input). Its Badges, the
// addresses of the files made from it, are the publish pass's to fill.
func ServerFileOf(l Listing, s *Summary, now time.Time) (ServerFile, time.Time) {
	srv := l.Server
	cadence := data.Tier(srv.Rank)
	f := ServerFile{
		ID: srv.ID, URL: orNull(srv.URL), Rank: srv.Rank, Tier: tierName(srv.Rank),
		CadenceSeconds: Secs(cadence),
		History:        History{}, Incidents: []Incident{}, CertWarnings: []CertWarning{}, ToolDefs: ToolDefinitions{Changes: []ToolChange{}},
		Listed:     TimePtr(srv.Added),
		SharedWith: l.SharedWith,
	}
	if l.EffCad > cadence {
		f.EffectiveCad = Secs(l.EffCad)
		cadence = l.EffCad
	}
	if s != nil && len(s.Checks) > 0 && s.State.URL != srv.URL {
		s = nil // its address changed: a new server
	}
	var expires time.Time
	earliest := func(t time.Time) {
		if !t.IsZero() && (expires.IsZero() || t.Before(expires)) {
			expires = t
		}
	}
	switch {
	case l.Paused:
		f.Status = data.Paused
	case s == nil || s.State.LastCheck.IsZero():
		f.Status = data.Pending
		if why := srv.NotCheckable(); why != "" { // no check can tell more
			f.Status, f.Detail = data.NotCheckable, orNull(why)
		}
	default:
		f.Status = s.State.LastStatus
		f.Detail = orNull(s.State.LastDetail)
	}
	f.Label = f.Status.Label()
	// The daily series ends on the day of the last check, a recorded fact:
	// it moves only with a check, which renders the file anyway, and a
	// rebuild gives it as the incremental runs did, with no file of a
	// million rewritten at midnight. A server never checked has no day to
	// show: its series ends today, and moves on at midnight.
	dailyEnd := now
	if s != nil && !s.State.LastCheck.IsZero() {
		dailyEnd = s.State.LastCheck
	} else {
		y, m, d := now.UTC().Date()
		earliest(time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC))
	}
	// No next check for a paused server (rule S8), nor for one whose
	// address no check can reach: it is never asked anything.
	if !l.Paused && srv.NotCheckable() == "" {
		if !l.PlanNext.IsZero() && l.PlanNext.After(now) {
			f.NextCheck, f.NextCheckFrom = TimePtr(l.PlanNext), orNull("plan")
			earliest(l.PlanNext)
		} else if s != nil {
			if t := estimateNext(s.State, cadence); !t.IsZero() {
				f.NextCheck, f.NextCheckFrom = TimePtr(t), orNull("estimate")
			}
		}
	}
	if s == nil {
		f.Daily = (&Summary{}).daily(dailyEnd, srv.Added)
		return f, expires
	}
	f.Daily = s.daily(dailyEnd, srv.Added)
	f.Incidents = s.incidents()
	f.ToolDefs = s.Tools
	if f.ToolDefs.Changes == nil {
		f.ToolDefs.Changes = []ToolChange{}
	}
	f.LatencyP50 = s.medianLatency(now, MonthWindow)
	f.LastCheck = TimePtr(s.State.LastCheck)
	f.LastAnswered = TimePtr(s.State.LastAnswered)
	f.FailingSince = TimePtr(s.State.FailingSince)
	if r := s.Last; r != nil {
		f.LastResult = &LastResult{
			Status: r.Status, Label: r.Status.Label(), Detail: orNull(r.Detail), Started: Time{TruncMS(r.Started)},
			LatencyMS: latencyOf(*r), HTTPStatus: orNull(r.HTTPStatus),
			Protocol: orNull(r.Protocol), Era: orNull(era(r.Protocol, r.Transport)), Transport: orNull(r.Transport),
			ServerName: orNull(r.ServerName), ServerVersion: orNull(r.ServerVersion),
			ServerTitle: orNull(r.ServerTitle), ServerDescription: orNull(r.ServerDescription), ServerWebsite: orNull(data.WebLink(r.ServerWebsite)),
			KeyInfo:   orNull(data.WebLink(r.KeyInfo)),
			ToolCount: r.ToolCount, Tools: append([]string{}, r.Tools...), Timings: timingsOf(r),
			supportFields: supportFieldsOf(r.Support),
		}
		if r.Status == data.Working {
			f.LastResult.ToolProblems = append([]data.ToolProblem{}, r.ToolProblems...)
		}
	}
	f.Certificate = certificateOf(s.Cert, now)
	f.CertWarnings = certWarningsOf(s.CertWarnings)
	f.Protocol = protocolOf(s.Proto)
	earliest(certChange(s.Cert, now))
	for i := len(s.Checks) - 1; i >= 0 && len(f.History) < HistoryLen; i-- {
		c := s.Checks[i]
		f.History = append(f.History, Check{Started: Time{time.UnixMilli(c.At).UTC()}, Status: c.Status, Detail: c.Detail, LatencyMS: c.LatencyMS, Timings: c.Phases})
	}
	var e time.Time
	f.Uptime.Day, e = s.uptime(now, dayWindow)
	earliest(e)
	f.Uptime.Week, e = s.uptime(now, weekWindow)
	earliest(e)
	f.Uptime.Month, e = s.uptime(now, MonthWindow)
	earliest(e)
	return f, expires
}
