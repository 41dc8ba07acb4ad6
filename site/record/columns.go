package record

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// The columns of a server's history and daily series are most of its
// file, and a publish reads back the file of each server it renders and
// writes it again. encoding/json spent some 350 µs a server on them (by
// reflection, a pointer allocated a number): historyColumns and
// dailyColumns are written here by hand, byte for byte as encoding/json
// writes them, and read by hand in the form they are written in. Any other
// form (keys in another order or not known, a reason with an escape, a
// number with a fraction, a null where a number is written, a time in
// another layout) is left to encoding/json, so that what is read, and
// what is refused, is as it was; a status is read as the rest of the
// file reads one (scanner.outcome), its escapes as encoding/json reads
// them.

// appendJSON appends c as encoding/json writes it.
func (c *historyColumns) appendJSON(b []byte) []byte {
	b = append(b, `{"started":`...)
	b = appendList(b, c.Started, appendTime)
	b = append(b, `,"status":`...)
	b = appendList(b, c.Status, appendOutcome)
	b = append(b, `,"reason":`...)
	b = appendList(b, c.Detail, func(b []byte, s *string) []byte {
		if s == nil {
			return append(b, "null"...)
		}
		return AppendString(b, *s)
	})
	b = append(b, `,"latency_ms":`...)
	b = appendList(b, c.Latency, appendNullInt)
	b = appendPhases(append(b, `,"timings":{`...), c.Timings.each(), func(b []byte, col []*int64) []byte { return appendList(b, col, appendNullInt) })
	return append(b, "}}"...)
}

// scan reads c from b in the form appendJSON writes, whitespace allowed
// between tokens; false, c not to be used, for any other form.
func (c *historyColumns) scan(b []byte) bool {
	s := &scanner{b: b, ok: true}
	c.read(s)
	return s.end()
}

// read reads c as scan does, from where s is.
func (c *historyColumns) read(s *scanner) {
	s.expect('{')
	s.key("started")
	c.Started = scanList(s, (*scanner).time)
	s.next()
	s.key("status")
	c.Status = scanList(s, (*scanner).outcome)
	s.next()
	s.key("reason")
	c.Detail = scanList(s, func(s *scanner) *string {
		if s.null() {
			return nil
		}
		v := s.string()
		return &v
	})
	s.next()
	s.key("latency_ms")
	c.Latency = s.nullInts()
	s.next()
	s.key("timings")
	s.expect('{')
	scanPhases(s, c.Timings.each(), (*scanner).nullInts)
	s.expect('}')
	s.expect('}')
}

// phaseKeys are the keys of the four phases, in the order of the fields
// of checkPhaseColumns and phaseColumns.
var phaseKeys = [4]string{"dns_ms", "connect_ms", "tls_ms", "wait_ms"}

// appendPhases appends the members of the four phases, keyed by
// phaseKeys, each value as add writes it: a check's phases or their
// columns.
func appendPhases[T any](b []byte, vs [4]*T, add func([]byte, T) []byte) []byte {
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = add(append(append(append(b, '"'), phaseKeys[i]...), `":`...), *v)
	}
	return b
}

// scanPhases reads the members appendPhases writes, each value into to's
// as read reads it.
func scanPhases[T any](s *scanner, to [4]*T, read func(*scanner) T) {
	for i, v := range to {
		if i > 0 {
			s.next()
		}
		s.key(phaseKeys[i])
		*v = read(s)
	}
}

// each returns the columns of the four phases, in the order of phaseKeys.
func (p *checkPhaseColumns) each() [4]*[]*int64 {
	return [4]*[]*int64{&p.DNS, &p.Connect, &p.TLS, &p.Wait}
}

// appendJSON appends c as encoding/json writes it.
func (c *dailyColumns) appendJSON(b []byte) []byte {
	b = append(b, `{"from":`...)
	b = AppendString(b, c.From)
	b = append(b, `,"days":`...)
	b = strconv.AppendInt(b, int64(c.Days), 10)
	b = append(b, `,"unlisted":`...)
	b = appendList(b, c.Unlisted, func(b []byte, r [2]int) []byte {
		b = strconv.AppendInt(append(b, '['), int64(r[0]), 10)
		b = strconv.AppendInt(append(b, ','), int64(r[1]), 10)
		return append(b, ']')
	})
	for _, col := range []struct {
		key string
		v   []int
	}{{"day", c.Day}, {"counted", c.Counted}, {"answered", c.Answered}} {
		b = append(append(append(b, ",\""...), col.key...), "\":"...)
		b = appendList(b, col.v, func(b []byte, v int) []byte { return strconv.AppendInt(b, int64(v), 10) })
	}
	b = append(b, `,"latency_p50_ms":`...)
	b = appendList(b, c.P50, appendNullInt)
	b = append(b, `,"latency_p95_ms":`...)
	b = appendList(b, c.P95, appendNullInt)
	b = append(b, `,"phases":{`...)
	for i, ph := range c.Phases.each(&DayPhases{}) {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), phaseKeys[i]...), `":{"p50":`...)
		b = appendList(b, ph.c.P50, appendNullInt)
		b = append(b, `,"p95":`...)
		b = appendList(b, ph.c.P95, appendNullInt)
		b = append(b, '}')
	}
	return append(b, "}}"...)
}

// scan reads c from b in the form appendJSON writes, whitespace allowed
// between tokens; false, c not to be used, for any other form.
func (c *dailyColumns) scan(b []byte) bool {
	s := &scanner{b: b, ok: true}
	c.read(s)
	return s.end()
}

// read reads c as scan does, from where s is.
func (c *dailyColumns) read(s *scanner) {
	s.expect('{')
	s.key("from")
	c.From = s.string()
	s.next()
	s.key("days")
	c.Days = int(s.int())
	s.next()
	s.key("unlisted")
	c.Unlisted = scanList(s, func(s *scanner) [2]int {
		s.expect('[')
		a := s.int()
		s.next()
		z := s.int()
		s.expect(']')
		return [2]int{int(a), int(z)}
	})
	for _, col := range []struct {
		key string
		v   *[]int
	}{{"day", &c.Day}, {"counted", &c.Counted}, {"answered", &c.Answered}} {
		s.next()
		s.key(col.key)
		*col.v = scanList(s, func(s *scanner) int { return int(s.int()) })
	}
	s.next()
	s.key("latency_p50_ms")
	c.P50 = s.nullInts()
	s.next()
	s.key("latency_p95_ms")
	c.P95 = s.nullInts()
	s.next()
	s.key("phases")
	s.expect('{')
	for i, ph := range c.Phases.each(&DayPhases{}) {
		if i > 0 {
			s.next()
		}
		s.key(phaseKeys[i])
		s.expect('{')
		s.key("p50")
		ph.c.P50 = s.nullInts()
		s.next()
		s.key("p95")
		ph.c.P95 = s.nullInts()
		s.expect('}')
	}
	s.expect('}')
	s.expect('}')
}

// appendList appends vs as a JSON list, each by each; nil as null, as
// encoding/json writes a nil slice.
func appendList[T any](b []byte, vs []T, each func([]byte, T) []byte) []byte {
	if vs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = each(b, v)
	}
	return append(b, ']')
}

func appendNullInt(b []byte, v *int64) []byte {
	return appendNullable(b, v, func(b []byte, v int64) []byte { return strconv.AppendInt(b, v, 10) })
}

// AppendString appends s quoted as json.Marshal writes it, without its
// reflection; one with a byte encoding/json escapes (a quote, a
// backslash, a control character, <, > or &, or any byte past ASCII,
// which it may) is quoted by encoding/json itself.
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// scanner reads JSON of a form known in advance. Any token it does not
// expect clears ok, after which every read returns a zero value: the
// caller checks ok once, at the end.
type scanner struct {
	b  []byte
	i  int
	ok bool
}

// ws passes over whitespace and returns the next byte, 0 at the end or
// once a read failed.
func (s *scanner) ws() byte {
	for s.ok && s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return c
		}
	}
	return 0
}

// expect reads the byte c.
func (s *scanner) expect(c byte) {
	if s.ws() != c {
		s.ok = false
		return
	}
	s.i++
}

// next reads the comma between two members or items.
func (s *scanner) next() { s.expect(',') }

// key reads the key name, which has nothing to escape, and its colon.
func (s *scanner) key(name string) {
	if s.ws() != '"' {
		s.ok = false
		return
	}
	end := s.i + 1 + len(name)
	if end >= len(s.b) || string(s.b[s.i+1:end]) != name || s.b[end] != '"' {
		s.ok = false
		return
	}
	s.i = end + 1
	s.expect(':')
}

// end reports whether everything was read as expected, and nothing but
// whitespace is left.
func (s *scanner) end() bool {
	s.ws()
	return s.ok && s.i == len(s.b)
}

// null reads null, if it is next.
func (s *scanner) null() bool {
	if s.ws() != 'n' || len(s.b)-s.i < 4 || string(s.b[s.i:s.i+4]) != "null" {
		return false
	}
	s.i += 4
	return true
}

// int reads an integer of JSON's syntax, without a fraction or an
// exponent, that an int64 holds.
func (s *scanner) int() int64 {
	neg := s.ws() == '-'
	if neg {
		s.i++
	}
	digits := s.i
	var u uint64
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		u = u*10 + uint64(s.b[s.i]-'0')
		s.i++
	}
	n := s.i - digits
	switch {
	case n == 0, n > 1 && s.b[digits] == '0', n > 18: // no digit, a leading zero, or perhaps too large
		s.ok = false
	case s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E'):
		s.ok = false
	}
	if !s.ok {
		return 0
	}
	if neg {
		return -int64(u)
	}
	return int64(u)
}

// nullInts reads a list of integers and nulls, the integers in one
// block: encoding/json allocated one each.
func (s *scanner) nullInts() []*int64 {
	n := s.listLen()
	block := make([]int64, 0, n) // never grown: the pointers stay in it
	vs := make([]*int64, 0, n)
	vs = scanInto(s, vs, func(s *scanner) *int64 {
		if s.null() {
			return nil
		}
		if len(block) == cap(block) {
			s.ok = false
			return nil
		}
		block = append(block, s.int())
		return &block[len(block)-1]
	})
	return vs
}

// string reads a string without escapes or control characters, of valid
// UTF-8.
func (s *scanner) string() string {
	if s.ws() != '"' {
		s.ok = false
		return ""
	}
	start := s.i + 1
	end := bytes.IndexByte(s.b[start:], '"')
	if end < 0 {
		s.ok = false
		return ""
	}
	v := s.b[start : start+end]
	for _, c := range v {
		if c < 0x20 || c == '\\' {
			s.ok = false
			return ""
		}
	}
	if !utf8.Valid(v) {
		s.ok = false
		return ""
	}
	s.i = start + end + 1
	return string(v)
}

// time reads a time as appendTime writes it (TimeLayout), which
// time.Parse would read as the same time; any other is not read.
func (s *scanner) time() Time {
	if s.ws() != '"' || len(s.b)-s.i < len(TimeLayout)+2 || s.b[s.i+len(TimeLayout)+1] != '"' {
		s.ok = false
		return Time{}
	}
	v := s.b[s.i+1 : s.i+1+len(TimeLayout)]
	num := func(from, to int) int {
		n := 0
		for _, c := range v[from:to] {
			if c < '0' || c > '9' {
				s.ok = false
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	year, month, day := num(0, 4), num(5, 7), num(8, 10)
	hour, minute, sec, ms := num(11, 13), num(14, 16), num(17, 19), num(20, 23)
	if v[4] != '-' || v[7] != '-' || v[10] != 'T' || v[13] != ':' || v[16] != ':' || v[19] != '.' || v[23] != 'Z' ||
		month < 1 || month > 12 || day < 1 || day > daysIn(year, time.Month(month)) || hour > 23 || minute > 59 || sec > 59 {
		s.ok = false
	}
	if !s.ok {
		return Time{}
	}
	s.i += len(TimeLayout) + 2
	return Time{time.Date(year, time.Month(month), day, hour, minute, sec, ms*int(time.Millisecond), time.UTC)}
}

// daysIn returns the number of days of month in year.
func daysIn(year int, month time.Month) int {
	return time.Date(year, month+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// scanList reads a JSON list, each item by item; an empty list is an
// empty slice, not nil, as encoding/json reads it.
func scanList[T any](s *scanner, item func(*scanner) T) []T {
	return scanInto(s, make([]T, 0, s.listLen()), item)
}

// listLen returns, before a list, how many items it may have, one more
// than the commas up to the first ']': its length for a list of numbers,
// about it for others.
func (s *scanner) listLen() int {
	if s.ws() != '[' {
		return 0
	}
	end := bytes.IndexByte(s.b[s.i:], ']')
	if end < 0 {
		return 0
	}
	return bytes.Count(s.b[s.i:s.i+end], []byte{','}) + 1
}

// scanInto reads a JSON list into vs, each item by item.
func scanInto[T any](s *scanner, vs []T, item func(*scanner) T) []T {
	s.expect('[')
	if s.ws() == ']' {
		s.i++
		return vs
	}
	for s.ok {
		vs = append(vs, item(s))
		if s.ws() != ',' {
			break
		}
		s.i++
	}
	s.expect(']')
	if !s.ok {
		return nil
	}
	return vs
}
