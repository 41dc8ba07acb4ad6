package record

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"

	"plug.directory/prober/data"
)

// The rest of a server's file, all but its columns, is a third of its
// bytes, but encoding/json spent more on it than on the columns done by
// hand: reading, a pass to check the text, then each member found by its
// key and set by reflection; writing, the columns' places found in what
// it wrote. scanRest reads it by hand in the form encoding/json writes it
// (every member, in the order of the fields, none unknown, none twice); a
// string's escapes and a number's value are read as encoding/json reads
// them. Any other form is left to encoding/json, as for the columns, so
// that what is read, and what is refused, is as it was. appendJSON, its
// mirror, writes the whole file. A field added to ServerFile or to a type
// it holds needs its line in both: TestServerFileRestByHand and
// TestServerFileWrittenAsEncodingJSON fail until it has them.

// scanRest reads into f, a zero ServerFile, the members of the object b
// but its columns (history, daily), as encoding/json writes them; false,
// f not to be used, for any other form.
func (f *ServerFile) scanRest(b []byte) bool {
	s := &scanner{b: b, ok: true}
	f.read(s, nil, nil)
	return s.end()
}

// scanWhole reads the whole of b, a server's file, into f, a zero
// ServerFile, in the form encoding/json writes it, its columns in their
// places: one pass, without cutting them from the rest first. False, f
// not to be used, for any other form, or columns whose checks or days do
// not hold together.
func (f *ServerFile) scanWhole(b []byte) bool {
	s := &scanner{b: b, ok: true}
	var hist historyColumns
	var daily dailyColumns
	f.read(s, &hist, &daily)
	return s.end() && f.History.fromColumns(&hist) == nil && f.Daily.fromColumns(&daily) == nil
}

// read reads f's members from s, its columns into hist and daily in their
// places, or none when they are nil (scanRest).
func (f *ServerFile) read(s *scanner, hist *historyColumns, daily *dailyColumns) {
	s.expect('{')
	s.key("id")
	f.ID = s.text()
	s.field("url")
	f.URL = nullable(s, (*scanner).text)
	s.field("rank")
	f.Rank = int(s.int())
	s.field("listed_at")
	f.Listed = nullable(s, (*scanner).time)
	s.field("tier")
	f.Tier = s.text()
	s.field("status")
	f.Status = s.outcome()
	s.field("label")
	f.Label = s.text()
	s.field("reason")
	f.Detail = nullable(s, (*scanner).text)
	s.field("last_check")
	f.LastCheck = nullable(s, (*scanner).time)
	s.field("next_check")
	f.NextCheck = nullable(s, (*scanner).time)
	s.field("next_check_from")
	f.NextCheckFrom = nullable(s, (*scanner).text)
	s.field("last_answered")
	f.LastAnswered = nullable(s, (*scanner).time)
	s.field("failing_since")
	f.FailingSince = nullable(s, (*scanner).time)
	s.field("cadence_seconds")
	f.CadenceSeconds = s.int()
	if s.optional("effective_cadence_seconds") {
		f.EffectiveCad = s.int()
	}
	if s.optional("shared_with") {
		f.SharedWith = s.texts()
	}
	s.field("last_result")
	f.LastResult = scanPtr(s, (*LastResult).scan)
	s.field("certificate")
	f.Certificate = scanPtr(s, (*Certificate).scan)
	s.field("certificate_warnings")
	f.CertWarnings = scanObjects(s, (*CertWarning).scan)
	if hist != nil {
		s.field("history")
		hist.read(s)
	}
	s.field("uptime")
	f.Uptime.scan(s)
	s.field("latency_p50_ms_30d")
	f.LatencyP50 = nullable(s, (*scanner).int)
	if daily != nil {
		s.field("daily")
		daily.read(s)
	}
	s.field("incidents")
	f.Incidents = scanObjects(s, (*Incident).scan)
	s.field("tool_definitions")
	f.ToolDefs.scan(s)
	s.field("badges")
	f.Badges.scan(s)
	s.field("protocol")
	f.Protocol = scanPtr(s, (*Protocol).scan)
	s.expect('}')
}

func (r *LastResult) scan(s *scanner) {
	s.expect('{')
	s.key("status")
	r.Status = s.outcome()
	s.field("label")
	r.Label = s.text()
	s.field("reason")
	r.Detail = nullable(s, (*scanner).text)
	s.field("started")
	r.Started = s.time()
	s.field("latency_ms")
	r.LatencyMS = nullable(s, (*scanner).int)
	s.field("http_status")
	r.HTTPStatus = intOf(nullable(s, (*scanner).int))
	for _, m := range []struct {
		key string
		to  **string
	}{
		{"protocol", &r.Protocol}, {"era", &r.Era}, {"transport", &r.Transport},
		{"server_name", &r.ServerName}, {"server_version", &r.ServerVersion}, {"server_title", &r.ServerTitle},
		{"server_description", &r.ServerDescription}, {"server_website", &r.ServerWebsite}, {"key_info", &r.KeyInfo},
	} {
		s.field(m.key)
		*m.to = nullable(s, (*scanner).text)
	}
	s.field("tool_count")
	r.ToolCount = int(s.int())
	s.field("tools")
	r.Tools = s.texts()
	s.field("timings")
	r.Timings = scanPtr(s, (*Timings).scan)
	s.field("tool_problems")
	r.ToolProblems = scanObjects(s, scanToolProblem)
	r.supportFields.scan(s)
	s.expect('}')
}

// scan reads the members of f within the object of the type that holds
// it, after a member of that type's.
func (f *supportFields) scan(s *scanner) {
	s.field("discover_versions")
	f.DiscoverVersions = s.texts()
	s.field("session")
	f.Session = nullable(s, (*scanner).bool)
	s.field("answers")
	f.Answers = nullable(s, (*scanner).text)
}

func (t *Timings) scan(s *scanner) {
	s.expect('{')
	scanPhases(s, t.Phases.each(), func(s *scanner) *int64 { return nullable(s, (*scanner).int) })
	s.field("first_byte_ms")
	if !s.null() {
		t.FirstByteMS = scanList(s, (*scanner).int)
	}
	s.field("total_ms")
	t.TotalMS = s.int()
	s.expect('}')
}

func scanToolProblem(p *data.ToolProblem, s *scanner) {
	s.expect('{')
	s.key("tool")
	p.Tool = s.text()
	s.field("rule")
	p.Rule = s.text()
	s.field("message")
	p.Message = s.text()
	s.expect('}')
}

func (c *Certificate) scan(s *scanner) {
	s.expect('{')
	s.key("not_after")
	c.NotAfter = s.time()
	s.field("issuer")
	c.Issuer = s.text()
	s.field("names")
	c.Names = s.texts()
	s.field("tls_version")
	c.TLSVersion = nullable(s, (*scanner).text)
	s.field("seen_at")
	c.SeenAt = s.time()
	s.field("days_left")
	c.DaysLeft = intOf(nullable(s, (*scanner).int))
	s.field("warning")
	c.Warning = s.bool()
	s.field("expired")
	c.Expired = s.bool()
	s.field("message")
	c.Message = s.text()
	s.expect('}')
}

func (w *CertWarning) scan(s *scanner) {
	s.expect('{')
	s.key("at")
	w.At = s.time()
	s.field("days_left")
	w.DaysLeft = int(s.int())
	s.field("not_after")
	w.NotAfter = s.time()
	s.expect('}')
}

func (u *UptimeSet) scan(s *scanner) {
	s.expect('{')
	for i, w := range u.windows() {
		if i > 0 {
			s.next()
		}
		s.key(uptimeKeys[i])
		s.expect('{')
		s.key("counted")
		w.Counted = int(s.int())
		s.field("answered")
		w.Answered = int(s.int())
		s.field("percent")
		w.Percent = s.floatPtr()
		s.expect('}')
	}
	s.expect('}')
}

// uptimeKeys are the keys of an UptimeSet's windows, in the order of
// windows.
var uptimeKeys = [3]string{"last_24h", "last_7d", "last_30d"}

// windows returns u's windows, in the order of its fields and uptimeKeys.
func (u *UptimeSet) windows() [3]*Uptime { return [3]*Uptime{&u.Day, &u.Week, &u.Month} }

// each returns p's phases, in the order of its fields and phaseKeys.
func (p *Phases) each() [4]**int64 { return [4]**int64{&p.DNSMS, &p.ConnectMS, &p.TLSMS, &p.WaitMS} }

func (in *Incident) scan(s *scanner) {
	s.expect('{')
	s.key("status")
	in.Status = s.outcome()
	s.field("label")
	in.Label = s.text()
	s.field("from")
	in.From = nullable(s, (*scanner).outcome)
	s.field("reason")
	in.Detail = nullable(s, (*scanner).text)
	s.field("start")
	in.Start = s.time()
	s.field("end")
	in.End = nullable(s, (*scanner).time)
	s.field("duration_seconds")
	in.DurationSeconds = nullable(s, (*scanner).int)
	s.expect('}')
}

func (t *ToolDefinitions) scan(s *scanner) {
	s.expect('{')
	s.key("hash")
	t.Hash = nullable(s, (*scanner).text)
	s.field("seen")
	t.Seen = nullable(s, (*scanner).time)
	s.field("changed_at")
	t.ChangedAt = nullable(s, (*scanner).time)
	s.field("changes")
	t.Changes = scanObjects(s, (*ToolChange).scan)
	s.expect('}')
}

func (c *ToolChange) scan(s *scanner) {
	s.expect('{')
	s.key("at")
	c.At = s.time()
	s.field("from_hash")
	c.From = s.text()
	s.field("to_hash")
	c.To = s.text()
	s.field("details")
	c.Details = s.bool()
	s.field("added")
	c.Added = s.texts()
	s.field("removed")
	c.Removed = s.texts()
	s.field("changed")
	c.Changed = scanObjects(s, func(f *ToolFieldChange, s *scanner) {
		s.expect('{')
		s.key("name")
		f.Name = s.text()
		s.field("fields")
		f.Fields = s.texts()
		s.expect('}')
	})
	s.expect('}')
}

func (l *BadgeLinks) scan(s *scanner) {
	s.expect('{')
	for i, m := range []struct {
		key string
		to  *string
	}{{"status", &l.Status}, {"uptime_30d", &l.Uptime}, {"latency", &l.Latency}, {"feed", &l.Feed}, {"certificate", &l.Cert}, {"strip", &l.Strip}} {
		if i > 0 {
			s.next()
		}
		s.key(m.key)
		*m.to = s.text()
	}
	s.expect('}')
}

func (p *Protocol) scan(s *scanner) {
	s.expect('{')
	s.key("version")
	p.Version = s.text()
	s.field("era")
	p.Era = s.text()
	s.field("transport")
	p.Transport = s.text()
	s.field("discover_versions")
	p.DiscoverVersions = s.texts()
	s.field("speaks_2026_07_28")
	p.Speaks20260728 = s.bool()
	s.field("session")
	p.Session = nullable(s, (*scanner).bool)
	s.field("answers")
	p.Answers = nullable(s, (*scanner).text)
	s.field("seen_at")
	p.SeenAt = s.time()
	s.expect('}')
}

// scanPtr reads null as nil, or an object into a new T.
func scanPtr[T any](s *scanner, scan func(*T, *scanner)) *T {
	if s.null() {
		return nil
	}
	v := new(T)
	scan(v, s)
	return v
}

// scanObjects reads null as nil, or a list of objects, each into a T.
func scanObjects[T any](s *scanner, scan func(*T, *scanner)) []T {
	if s.null() {
		return nil
	}
	return scanList(s, func(s *scanner) T {
		var v T
		scan(&v, s)
		return v
	})
}

// intOf converts a number read as an int64, which an int holds here.
func intOf(v *int64) *int {
	if v == nil {
		return nil
	}
	n := int(*v)
	return &n
}

// field reads the comma after a member and the key name of the next.
func (s *scanner) field(name string) {
	s.next()
	s.key(name)
}

// optional reads the comma and the key name of a member that may not be
// there (omitempty), and reports whether it was; when it was not, nothing
// is read.
func (s *scanner) optional(name string) bool {
	at, ok := s.i, s.ok
	s.field(name)
	if !s.ok {
		s.i, s.ok = at, ok
		return false
	}
	return ok
}

// text reads a string as encoding/json reads it: one with an escape is
// unquoted by encoding/json itself.
func (s *scanner) text() string {
	if s.ws() != '"' {
		s.ok = false
		return ""
	}
	end := bytes.IndexByte(s.b[s.i+1:], '"')
	if end < 0 || bytes.IndexByte(s.b[s.i+1:s.i+1+end], '\\') >= 0 {
		at := s.i
		if s.skipString(); !s.ok {
			return ""
		}
		var v string
		if json.Unmarshal(s.b[at:s.i], &v) != nil {
			s.ok = false
		}
		return v
	}
	return s.string()
}

// texts reads null as nil, or a list of strings.
func (s *scanner) texts() []string {
	if s.null() {
		return nil
	}
	return scanList(s, (*scanner).text)
}

// outcome reads a code of table O, or "", as data.Outcome's UnmarshalText
// reads them; any other string is not read.
func (s *scanner) outcome() data.Outcome {
	o := data.Outcome(s.text())
	if !o.Valid() && o != "" {
		s.ok = false
	}
	return o
}

// nullable reads null as nil, or a value as read reads it.
func nullable[T any](s *scanner, read func(*scanner) T) *T {
	if s.null() {
		return nil
	}
	v := read(s)
	return &v
}

// bool reads true or false.
func (s *scanner) bool() bool {
	switch c := s.ws(); {
	case c == 't' && bytes.HasPrefix(s.b[s.i:], []byte("true")):
		s.i += 4
		return true
	case c == 'f' && bytes.HasPrefix(s.b[s.i:], []byte("false")):
		s.i += 5
	default:
		s.ok = false
	}
	return false
}

// floatPtr reads null as nil, or a number of JSON's syntax as
// encoding/json reads it into a float64.
func (s *scanner) floatPtr() *float64 {
	if s.null() {
		return nil
	}
	s.ws()
	at := s.i
	digits := func() int {
		from := s.i
		for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
			s.i++
		}
		return s.i - from
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	if n := digits(); n == 0 || n > 1 && s.b[s.i-n] == '0' {
		s.ok = false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			s.ok = false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			s.ok = false
		}
	}
	if !s.ok {
		return nil
	}
	v, err := strconv.ParseFloat(string(s.b[at:s.i]), 64)
	if err != nil {
		s.ok = false
		return nil
	}
	return &v
}

// appendJSON appends f as json.Marshal writes it, byte for byte, its
// columns hist and daily in their places: the reader's mirror.
func (f *ServerFile) appendJSON(b []byte, hist *historyColumns, daily *dailyColumns) []byte {
	b = AppendString(append(b, `{"id":`...), f.ID)
	b = appendTextPtr(append(b, `,"url":`...), f.URL)
	b = strconv.AppendInt(append(b, `,"rank":`...), int64(f.Rank), 10)
	b = appendTimePtr(append(b, `,"listed_at":`...), f.Listed)
	b = AppendString(append(b, `,"tier":`...), f.Tier)
	b = AppendString(append(b, `,"status":`...), string(f.Status))
	b = AppendString(append(b, `,"label":`...), f.Label)
	b = appendTextPtr(append(b, `,"reason":`...), f.Detail)
	b = appendTimePtr(append(b, `,"last_check":`...), f.LastCheck)
	b = appendTimePtr(append(b, `,"next_check":`...), f.NextCheck)
	b = appendTextPtr(append(b, `,"next_check_from":`...), f.NextCheckFrom)
	b = appendTimePtr(append(b, `,"last_answered":`...), f.LastAnswered)
	b = appendTimePtr(append(b, `,"failing_since":`...), f.FailingSince)
	b = strconv.AppendInt(append(b, `,"cadence_seconds":`...), f.CadenceSeconds, 10)
	if f.EffectiveCad != 0 {
		b = strconv.AppendInt(append(b, `,"effective_cadence_seconds":`...), f.EffectiveCad, 10)
	}
	if len(f.SharedWith) > 0 {
		b = appendList(append(b, `,"shared_with":`...), f.SharedWith, AppendString)
	}
	b = appendPtr(append(b, `,"last_result":`...), f.LastResult, (*LastResult).appendJSON)
	b = appendPtr(append(b, `,"certificate":`...), f.Certificate, (*Certificate).appendJSON)
	b = appendObjects(append(b, `,"certificate_warnings":`...), f.CertWarnings, (*CertWarning).appendJSON)
	b = hist.appendJSON(append(b, `,"history":`...))
	b = f.Uptime.appendJSON(append(b, `,"uptime":`...))
	b = appendNullInt(append(b, `,"latency_p50_ms_30d":`...), f.LatencyP50)
	b = daily.appendJSON(append(b, `,"daily":`...))
	b = appendObjects(append(b, `,"incidents":`...), f.Incidents, (*Incident).appendJSON)
	b = f.ToolDefs.appendJSON(append(b, `,"tool_definitions":`...))
	b = f.Badges.appendJSON(append(b, `,"badges":`...))
	b = appendPtr(append(b, `,"protocol":`...), f.Protocol, (*Protocol).appendJSON)
	return append(b, '}')
}

func (r *LastResult) appendJSON(b []byte) []byte {
	b = AppendString(append(b, `{"status":`...), string(r.Status))
	b = AppendString(append(b, `,"label":`...), r.Label)
	b = appendTextPtr(append(b, `,"reason":`...), r.Detail)
	b = appendTime(append(b, `,"started":`...), r.Started)
	b = appendNullInt(append(b, `,"latency_ms":`...), r.LatencyMS)
	b = appendNullInt(append(b, `,"http_status":`...), int64Of(r.HTTPStatus))
	b = appendTextPtr(append(b, `,"protocol":`...), r.Protocol)
	b = appendTextPtr(append(b, `,"era":`...), r.Era)
	b = appendTextPtr(append(b, `,"transport":`...), r.Transport)
	b = appendTextPtr(append(b, `,"server_name":`...), r.ServerName)
	b = appendTextPtr(append(b, `,"server_version":`...), r.ServerVersion)
	b = appendTextPtr(append(b, `,"server_title":`...), r.ServerTitle)
	b = appendTextPtr(append(b, `,"server_description":`...), r.ServerDescription)
	b = appendTextPtr(append(b, `,"server_website":`...), r.ServerWebsite)
	b = appendTextPtr(append(b, `,"key_info":`...), r.KeyInfo)
	b = strconv.AppendInt(append(b, `,"tool_count":`...), int64(r.ToolCount), 10)
	b = appendList(append(b, `,"tools":`...), r.Tools, AppendString)
	b = appendPtr(append(b, `,"timings":`...), r.Timings, (*Timings).appendJSON)
	b = appendObjects(append(b, `,"tool_problems":`...), r.ToolProblems, appendToolProblem)
	b = appendList(append(b, `,"discover_versions":`...), r.DiscoverVersions, AppendString)
	b = appendBoolPtr(append(b, `,"session":`...), r.Session)
	b = appendTextPtr(append(b, `,"answers":`...), r.Answers)
	return append(b, '}')
}

func (t *Timings) appendJSON(b []byte) []byte {
	b = appendPhases(append(b, '{'), t.Phases.each(), appendNullInt)
	b = appendList(append(b, `,"first_byte_ms":`...), t.FirstByteMS, func(b []byte, v int64) []byte { return strconv.AppendInt(b, v, 10) })
	b = strconv.AppendInt(append(b, `,"total_ms":`...), t.TotalMS, 10)
	return append(b, '}')
}

func appendToolProblem(p *data.ToolProblem, b []byte) []byte {
	b = AppendString(append(b, `{"tool":`...), p.Tool)
	b = AppendString(append(b, `,"rule":`...), p.Rule)
	b = AppendString(append(b, `,"message":`...), p.Message)
	return append(b, '}')
}

func (c *Certificate) appendJSON(b []byte) []byte {
	b = appendTime(append(b, `{"not_after":`...), c.NotAfter)
	b = AppendString(append(b, `,"issuer":`...), c.Issuer)
	b = appendList(append(b, `,"names":`...), c.Names, AppendString)
	b = appendTextPtr(append(b, `,"tls_version":`...), c.TLSVersion)
	b = appendTime(append(b, `,"seen_at":`...), c.SeenAt)
	b = appendNullInt(append(b, `,"days_left":`...), int64Of(c.DaysLeft))
	b = strconv.AppendBool(append(b, `,"warning":`...), c.Warning)
	b = strconv.AppendBool(append(b, `,"expired":`...), c.Expired)
	b = AppendString(append(b, `,"message":`...), c.Message)
	return append(b, '}')
}

func (w *CertWarning) appendJSON(b []byte) []byte {
	b = appendTime(append(b, `{"at":`...), w.At)
	b = strconv.AppendInt(append(b, `,"days_left":`...), int64(w.DaysLeft), 10)
	b = appendTime(append(b, `,"not_after":`...), w.NotAfter)
	return append(b, '}')
}

func (u *UptimeSet) appendJSON(b []byte) []byte {
	b = append(b, '{')
	for i, w := range u.windows() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), uptimeKeys[i]...), `":`...)
		b = strconv.AppendInt(append(b, `{"counted":`...), int64(w.Counted), 10)
		b = strconv.AppendInt(append(b, `,"answered":`...), int64(w.Answered), 10)
		b = appendFloatPtr(append(b, `,"percent":`...), w.Percent)
		b = append(b, '}')
	}
	return append(b, '}')
}

func (in *Incident) appendJSON(b []byte) []byte {
	b = AppendString(append(b, `{"status":`...), string(in.Status))
	b = AppendString(append(b, `,"label":`...), in.Label)
	b = appendNullable(append(b, `,"from":`...), in.From, appendOutcome)
	b = appendTextPtr(append(b, `,"reason":`...), in.Detail)
	b = appendTime(append(b, `,"start":`...), in.Start)
	b = appendTimePtr(append(b, `,"end":`...), in.End)
	b = appendNullInt(append(b, `,"duration_seconds":`...), in.DurationSeconds)
	return append(b, '}')
}

func (t *ToolDefinitions) appendJSON(b []byte) []byte {
	b = appendTextPtr(append(b, `{"hash":`...), t.Hash)
	b = appendTimePtr(append(b, `,"seen":`...), t.Seen)
	b = appendTimePtr(append(b, `,"changed_at":`...), t.ChangedAt)
	b = appendObjects(append(b, `,"changes":`...), t.Changes, (*ToolChange).appendJSON)
	return append(b, '}')
}

func (c *ToolChange) appendJSON(b []byte) []byte {
	b = appendTime(append(b, `{"at":`...), c.At)
	b = AppendString(append(b, `,"from_hash":`...), c.From)
	b = AppendString(append(b, `,"to_hash":`...), c.To)
	b = strconv.AppendBool(append(b, `,"details":`...), c.Details)
	b = appendList(append(b, `,"added":`...), c.Added, AppendString)
	b = appendList(append(b, `,"removed":`...), c.Removed, AppendString)
	b = appendObjects(append(b, `,"changed":`...), c.Changed, func(f *ToolFieldChange, b []byte) []byte {
		b = AppendString(append(b, `{"name":`...), f.Name)
		b = appendList(append(b, `,"fields":`...), f.Fields, AppendString)
		return append(b, '}')
	})
	return append(b, '}')
}

func (l *BadgeLinks) appendJSON(b []byte) []byte {
	b = AppendString(append(b, `{"status":`...), l.Status)
	b = AppendString(append(b, `,"uptime_30d":`...), l.Uptime)
	b = AppendString(append(b, `,"latency":`...), l.Latency)
	b = AppendString(append(b, `,"feed":`...), l.Feed)
	b = AppendString(append(b, `,"certificate":`...), l.Cert)
	b = AppendString(append(b, `,"strip":`...), l.Strip)
	return append(b, '}')
}

func (p *Protocol) appendJSON(b []byte) []byte {
	b = AppendString(append(b, `{"version":`...), p.Version)
	b = AppendString(append(b, `,"era":`...), p.Era)
	b = AppendString(append(b, `,"transport":`...), p.Transport)
	b = appendList(append(b, `,"discover_versions":`...), p.DiscoverVersions, AppendString)
	b = strconv.AppendBool(append(b, `,"speaks_2026_07_28":`...), p.Speaks20260728)
	b = appendBoolPtr(append(b, `,"session":`...), p.Session)
	b = appendTextPtr(append(b, `,"answers":`...), p.Answers)
	b = appendTime(append(b, `,"seen_at":`...), p.SeenAt)
	return append(b, '}')
}

// appendPtr appends null for nil, or the object v points to.
func appendPtr[T any](b []byte, v *T, add func(*T, []byte) []byte) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return add(v, b)
}

// appendObjects appends null for nil, or a list of objects.
func appendObjects[T any](b []byte, vs []T, add func(*T, []byte) []byte) []byte {
	if vs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = add(&vs[i], b)
	}
	return append(b, ']')
}

// appendNullable appends null for nil, or the value v points to as add
// appends it.
func appendNullable[T any](b []byte, v *T, add func([]byte, T) []byte) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return add(b, *v)
}

func appendTextPtr(b []byte, s *string) []byte      { return appendNullable(b, s, AppendString) }
func appendOutcome(b []byte, o data.Outcome) []byte { return AppendString(b, string(o)) }
func appendTimePtr(b []byte, t *Time) []byte        { return appendNullable(b, t, appendTime) }
func appendBoolPtr(b []byte, v *bool) []byte        { return appendNullable(b, v, strconv.AppendBool) }

// appendFloatPtr appends null for nil, or the finite number as
// encoding/json writes a float64, which writes itself any but a
// fixed-point one.
func appendFloatPtr(b []byte, v *float64) []byte {
	return appendNullable(b, v, func(b []byte, v float64) []byte {
		if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
			q, _ := json.Marshal(v) // a finite number always encodes
			return append(b, q...)
		}
		return strconv.AppendFloat(b, v, 'f', -1, 64)
	})
}

// int64Of converts an int to the int64 it is written as.
func int64Of(v *int) *int64 {
	if v == nil {
		return nil
	}
	n := int64(*v)
	return &n
}
