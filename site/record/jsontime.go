package record

import (
	"fmt"
	"time"
)

// TimeLayout is the one form of every time the site publishes: RFC 3339 in
// UTC with exactly three fractional digits (the history's millisecond
// precision), so that every time has the same length and string order is
// time order: 2026-12-02T18:57:01.000Z, never 18:57:01Z next to
// 18:57:00.032Z.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// Time is a published time: a time.Time whose JSON is TimeLayout, in UTC,
// truncated to the millisecond. It reads any RFC 3339 time back, so files
// published before in other lengths still load.
type Time struct{ time.Time }

// MarshalJSON writes t as TimeLayout.
func (t Time) MarshalJSON() ([]byte, error) {
	return appendTime(make([]byte, 0, len(TimeLayout)+2), t), nil
}

// appendTime appends t as MarshalJSON writes it.
func appendTime(b []byte, t Time) []byte {
	return append(AppendTime(append(b, '"'), t.Time), '"')
}

// AppendTime appends t in UTC as TimeLayout, digit by digit as
// AppendFormat writes it (a server's file has some 60 times, and
// AppendFormat was a fifth of writing one), but for a year it writes
// otherwise.
func AppendTime(b []byte, t time.Time) []byte {
	u := t.UTC()
	y, mo, d := u.Date()
	if y < 0 || y > 9999 {
		return u.AppendFormat(b, TimeLayout)
	}
	h, mi, s := u.Clock()
	ms, m := u.Nanosecond()/int(time.Millisecond), int(mo)
	return append(b, digit(y/1000), digit(y/100), digit(y/10), digit(y), '-', digit(m/10), digit(m), '-', digit(d/10), digit(d),
		'T', digit(h/10), digit(h), ':', digit(mi/10), digit(mi), ':', digit(s/10), digit(s), '.', digit(ms/100), digit(ms/10), digit(ms), 'Z')
}

// digit returns the last decimal digit of v, v >= 0.
func digit(v int) byte { return byte('0' + v%10) }

// UnmarshalJSON reads an RFC 3339 time.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("read time %s: not a string", b)
	}
	v, err := time.Parse(time.RFC3339Nano, string(b[1:len(b)-1]))
	if err != nil {
		return fmt.Errorf("read time: %w", err)
	}
	t.Time = v.UTC()
	return nil
}

func Secs(d time.Duration) int64 { return int64(d / time.Second) }
