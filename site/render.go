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

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
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
		ID: srv.ID, URL: srv.URL, Rank: srv.Rank, Tier: tierName(srv.Rank),
		CadenceSeconds: secs(cadence),
		History:        []Check{},
	}
	if l.EffCad > cadence {
		f.EffectiveCad = secs(l.EffCad)
		cadence = l.EffCad
	}
	if s != nil && len(s.Checks) > 0 && s.State.URL != srv.URL {
		s = nil // its address changed: a new server (issue 3)
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
	default:
		f.Status = s.State.LastStatus
		f.Reason = s.State.LastDetail
	}
	f.Label = f.Status.Label()
	if !l.Paused {
		if !l.PlanNext.IsZero() && l.PlanNext.After(now) {
			f.NextCheck, f.NextCheckFrom = timePtr(l.PlanNext), "plan"
			earliest(l.PlanNext)
		} else if s != nil {
			if t := estimateNext(s.State, cadence); !t.IsZero() {
				f.NextCheck, f.NextCheckFrom = timePtr(t), "estimate"
			}
		}
	}
	if s == nil {
		return f, expires
	}
	f.LastCheck = timePtr(s.State.LastCheck)
	f.LastAnswered = timePtr(s.State.LastAnswered)
	f.FailingSince = timePtr(s.State.FailingSince)
	if r := s.Last; r != nil {
		f.LastResult = &LastResult{
			Status: r.Status, Label: r.Status.Label(), Reason: r.Detail, Started: r.Started.UTC(),
			LatencyMS: r.Duration.Milliseconds(), HTTPStatus: r.HTTPStatus,
			Protocol: r.Protocol, Era: era(r.Protocol, r.Transport), Transport: r.Transport,
			ServerName: r.ServerName, ServerVersion: r.ServerVersion,
			ToolCount: r.ToolCount, Tools: append([]string{}, r.Tools...),
		}
	}
	for i := len(s.Checks) - 1; i >= 0 && len(f.History) < HistoryLen; i-- {
		c := s.Checks[i]
		f.History = append(f.History, Check{Started: time.UnixMilli(c.At).UTC(), Status: c.Status, Reason: c.Reason, LatencyMS: c.LatencyMS})
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
	if f.LastResult != nil {
		r.Tools = f.LastResult.ToolCount
	}
	return r
}

// indexRow returns the public index row of a stored row.
func (r row) indexRow() IndexRow {
	ir := IndexRow{ID: r.ID, Rank: r.Rank, Status: r.Status, Tools: int(r.Tools)}
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

// appendIndexRow appends the JSON of one index row exactly as
// json.Marshal(IndexRow) writes it, without its reflection: index.json has
// a row per listed server, a million of them.
func appendIndexRow(b []byte, r IndexRow) []byte {
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
	if r.LastCheck == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = r.LastCheck.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	b = append(b, `,"uptime_7d":`...)
	if r.Uptime7d == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendFloat(b, *r.Uptime7d, 'f', -1, 64)
	}
	b = append(b, `,"tools":`...)
	b = strconv.AppendInt(b, int64(r.Tools), 10)
	return append(b, '}')
}

// indexHead returns index.json without its rows: the count of servers and
// the totals per status.
func indexHead(st *store) IndexFile {
	counts := map[data.Outcome]int{}
	for _, r := range st.Rows {
		counts[r.Status]++
	}
	head := IndexFile{Servers: len(st.Rows)}
	for _, o := range data.Outcomes {
		head.Totals = append(head.Totals, StatusTotal{Status: o, Label: o.Label(), Count: counts[o]})
	}
	return head
}

// encodeIndex writes index.json from the stored rows in rank order.
func encodeIndex(st *store) []byte {
	head := indexHead(st)
	tb, _ := json.Marshal(head.Totals)
	b := make([]byte, 0, 128+len(tb)+len(st.Rows)*100)
	b = append(b, `{"servers":`...)
	b = strconv.AppendInt(b, int64(head.Servers), 10)
	b = append(b, ",\n\"totals\":"...)
	b = append(b, tb...)
	b = append(b, ",\n\"rows\":["...)
	for i, o := range st.Order {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '\n')
		b = appendIndexRow(b, st.Rows[o].indexRow())
	}
	return append(b, "\n]}\n"...)
}
