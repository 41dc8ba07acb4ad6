package site

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"plug.directory/prober/data"
)

// listed is what the site knows of a server apart from its checks.
type listed struct {
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

func timePtr(t time.Time) *Time {
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

// render builds the file of one server at now from what is listed and its
// summary (nil when it was never checked), and tells when the file next
// changes without new input (zero: not before new input).
func render(l listed, s *summary, now time.Time) (ServerFile, time.Time) {
	srv := l.Server
	cadence := data.Tier(srv.Rank)
	f := ServerFile{
		ID: srv.ID, URL: orNull(srv.URL), Rank: srv.Rank, Tier: tierName(srv.Rank),
		CadenceSeconds: secs(cadence),
		History:        []Check{}, Incidents: []Incident{}, CertWarnings: []CertWarning{}, ToolDefs: ToolDefinitions{Changes: []ToolChange{}},
		Listed: timePtr(srv.Added), Badges: badgeLinksOf(srv.ID),
		SharedWith: l.SharedWith,
	}
	if l.EffCad > cadence {
		f.EffectiveCad = secs(l.EffCad)
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
			f.NextCheck, f.NextCheckFrom = timePtr(l.PlanNext), orNull("plan")
			earliest(l.PlanNext)
		} else if s != nil {
			if t := estimateNext(s.State, cadence); !t.IsZero() {
				f.NextCheck, f.NextCheckFrom = timePtr(t), orNull("estimate")
			}
		}
	}
	if s == nil {
		f.Daily = (&summary{}).daily(dailyEnd, srv.Added)
		return f, expires
	}
	f.Daily = s.daily(dailyEnd, srv.Added)
	f.Incidents = s.incidents()
	f.ToolDefs = s.Tools
	if f.ToolDefs.Changes == nil {
		f.ToolDefs.Changes = []ToolChange{}
	}
	f.LatencyP50 = s.medianLatency(now, monthWindow)
	f.LastCheck = timePtr(s.State.LastCheck)
	f.LastAnswered = timePtr(s.State.LastAnswered)
	f.FailingSince = timePtr(s.State.FailingSince)
	if r := s.Last; r != nil {
		f.LastResult = &LastResult{
			Status: r.Status, Label: r.Status.Label(), Detail: orNull(r.Detail), Started: Time{truncMS(r.Started)},
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
	f.Uptime.Month, e = s.uptime(now, monthWindow)
	earliest(e)
	return f, expires
}

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
func rowOf(f ServerFile) IndexRow {
	r := IndexRow{ID: f.ID, Rank: f.Rank, Status: f.Status, LastCheck: f.LastCheck, Uptime7d: f.Uptime.Week.Percent}
	if lr := f.LastResult; lr != nil && lr.Status == data.Working {
		r.Tools = &lr.ToolCount
	}
	return r
}

// indexRow returns the public index row of a stored row.
func (r row) indexRow() IndexRow {
	ir := IndexRow{ID: r.ID, Rank: r.Rank, Status: r.Status}
	if r.Tools >= 0 {
		n := int(r.Tools)
		ir.Tools = &n
	}
	if r.LastCheck != 0 {
		ir.LastCheck = timePtr(time.UnixMilli(r.LastCheck))
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
		return t.AppendFormat(b, TimeLayout)
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
func indexHead(st *store) IndexFile {
	head := IndexFile{Servers: len(st.Rows)}
	counts, protocols, problems, pending := rowTotals(st)
	head.Protocols, head.ToolProblems, head.FactsPending = protocols, problems, pending
	for _, o := range data.Outcomes {
		head.Totals = append(head.Totals, StatusTotal{Status: o, Label: o.Label(), Count: counts[o]})
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
