package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// A server's file is read and written by hand, byte for byte as
// encoding/json reads and writes it: its two columns (history and daily),
// some two-thirds of its bytes, in columns.go, the rest in restjson.go.
// Reading, a file in the form it is written in is read in one pass
// (scanWhole); otherwise the columns are cut from the file's text by the
// members of its object (membersOf) and each part read in the form it is
// written in; any other form is read by encoding/json, so that what is
// read, and what is refused, is as it was.

// member is one member of a JSON object, where membersOf found it: its key
// as written between its quotes, where it starts (its key's opening
// quote), and where its value starts and ends.
type member struct {
	key             []byte
	at, start, stop int
}

// membersOf returns the members of the JSON object b, read for its
// structure only (the columns' scanner, skipValue): what a string, number
// or literal holds is left to the reader of each value. ok is false for a
// text that is not one object, whitespace aside, of members separated as
// JSON separates them.
func membersOf(b []byte) (ms []member, ok bool) {
	s := scanner{b: b, ok: true}
	s.expect('{')
	if s.ws() == '}' {
		s.i++
		return nil, s.end()
	}
	for s.ok {
		s.ws()
		at := s.i
		s.skipString()
		key := b[at+1 : max(s.i-1, at+1)]
		s.expect(':')
		s.ws()
		start := s.i
		s.skipValue()
		ms = append(ms, member{key, at, start, s.i})
		if s.ws() != ',' {
			break
		}
		s.i++
	}
	s.expect('}')
	if !s.end() {
		return nil, false
	}
	return ms, true
}

// skipString passes over a string, escapes and all, what it holds unread.
func (s *scanner) skipString() {
	if s.ws() != '"' {
		s.ok = false
		return
	}
	for i := s.i + 1; i < len(s.b); i++ {
		switch s.b[i] {
		case '\\':
			i++
		case '"':
			s.i = i + 1
			return
		}
	}
	s.ok = false
}

// skipValue passes over a value: a string, an object or a list to what
// closes it, anything else up to the next separator or whitespace.
func (s *scanner) skipValue() {
	c := s.ws()
	if !s.ok || s.i == len(s.b) {
		s.ok = false
		return
	}
	switch c {
	case '"':
		s.skipString()
	case '{', '[':
		depth := 0
		for i := s.i; i < len(s.b); i++ {
			switch s.b[i] {
			case '"':
				s.i = i
				if s.skipString(); !s.ok {
					return
				}
				i = s.i - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					s.i = i + 1
					return
				}
			}
		}
		s.ok = false
	default:
		i := s.i
		for ; i < len(s.b); i++ {
			if c := s.b[i]; c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				break
			}
		}
		s.ok, s.i = i > s.i, i
	}
}

// The keys of the columns in a server's file.
var (
	historyKey = []byte("history")
	dailyKey   = []byte("daily")
)

// ReadServerFile reads a server's file as json.Unmarshal reads it into a
// ServerFile: the same text is read the same or refused with the same
// error. A file in the form it is written in is read by hand in one pass
// (scanWhole). Otherwise the columns are cut from the text when each is
// one member of the file's object, and no other key could be read as
// theirs (encoding/json matches a key to a field as bytes.EqualFold does,
// after its escapes); any other text, or an error, is read by
// json.Unmarshal whole.
func ReadServerFile(b []byte) (ServerFile, error) {
	var whole ServerFile
	if whole.scanWhole(b) {
		return whole, nil
	}
	if f, ok := readServerFileByMembers(b); ok {
		return f, nil
	}
	var f ServerFile
	return f, json.Unmarshal(b, &f)
}

// readServerFileByMembers reads b as ReadServerFile does, its columns by
// hand and the rest by hand too (scanRest) or with encoding/json, or
// returns false.
func readServerFileByMembers(b []byte) (f ServerFile, ok bool) {
	rest, hist, daily, ok := cutColumns(b)
	if !ok {
		return f, false
	}
	if !f.scanRest(rest) {
		f = ServerFile{}
		if json.Unmarshal(rest, &f) != nil {
			return ServerFile{}, false
		}
	}
	if f.History.UnmarshalJSON(hist) != nil || f.Daily.UnmarshalJSON(daily) != nil {
		return ServerFile{}, false
	}
	return f, true
}

// cutColumns cuts the columns from the object b, a server's file: its
// other members as an object of their own, in their order, and the
// values of its history and daily series; false when b is not one object
// with each column once, under a key no other could be read as.
func cutColumns(b []byte) (rest, hist, daily []byte, ok bool) {
	ms, ok := membersOf(b)
	if !ok {
		return nil, nil, nil, false
	}
	var hm, dm *member
	size := 2
	for i := range ms {
		m := &ms[i]
		switch {
		case hm == nil && bytes.Equal(m.key, historyKey):
			hm = m
		case dm == nil && bytes.Equal(m.key, dailyKey):
			dm = m
		case bytes.IndexByte(m.key, '\\') >= 0 || bytes.EqualFold(m.key, historyKey) || bytes.EqualFold(m.key, dailyKey):
			return nil, nil, nil, false
		default:
			size += m.stop - m.at + 1
		}
	}
	if hm == nil || dm == nil {
		return nil, nil, nil, false
	}
	rest = make([]byte, 1, size)
	rest[0] = '{'
	for i := range ms {
		if m := &ms[i]; m != hm && m != dm {
			if len(rest) > 1 {
				rest = append(rest, ',')
			}
			rest = append(rest, b[m.at:m.stop]...)
		}
	}
	return append(rest, '}'), b[hm.start:hm.stop], b[dm.start:dm.stop], true
}

// MarshalServerFile returns json.Marshal(f), byte for byte, written by
// hand (ServerFile.appendJSON); an uptime's percent that encoding/json
// refuses (NaN, an infinity) is refused with its error.
func MarshalServerFile(f ServerFile) ([]byte, error) {
	for _, p := range [3]*float64{f.Uptime.Day.Percent, f.Uptime.Week.Percent, f.Uptime.Month.Percent} {
		if p != nil && (math.IsNaN(*p) || math.IsInf(*p, 0)) {
			_, err := json.Marshal(f)
			return nil, fmt.Errorf("encode server file %s: %w", f.ID, err)
		}
	}
	hc, dc := columnsOf(f.History), dailyColumnsOf(f.Daily)
	out := make([]byte, 0, 3000+130*len(f.History)+400+60*len(dc.Day))
	return f.appendJSON(out, &hc, &dc), nil
}
