package cli

import (
	"flag"
	"fmt"
	"time"
)

// timeLayouts are the forms ParseTime accepts, tried in order: RFC 3339
// (Go's parser also takes fractional seconds), RFC 3339 without seconds,
// and both without a zone, read as UTC.
var timeLayouts = []string{
	time.RFC3339,
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04",
}

// TimeForms names the accepted forms, for usage lines and errors.
const TimeForms = "2026-12-02T10:33 (UTC), or RFC 3339 with or without seconds: 2026-12-02T10:33:00Z, 2026-12-02T11:33+01:00"

// MinuteLayout formats a minute in the shortest form ParseTime reads back
// (UTC): hints that name a minute use it.
const MinuteLayout = "2006-01-02T15:04"

// ParseTime reads a time given on a command line, in one of the forms
// TimeForms names, and returns it in UTC. Any other text is an error that
// names the forms (the flag package quotes the value before it).
func ParseTime(v string) (time.Time, error) {
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("not a time: want %s", TimeForms)
}

// TimeVar defines a flag whose value ParseTime reads into *dst; a value it
// cannot read is a usage error naming the flag.
func TimeVar(fs *flag.FlagSet, dst *time.Time, name, usage string) {
	fs.Func(name, usage, func(v string) error {
		t, err := ParseTime(v)
		if err != nil {
			return err
		}
		*dst = t
		return nil
	})
}
