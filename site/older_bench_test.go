package site

import (
	"testing"
	"time"
)

// steadyOlderLog returns an older-checks file as a server checked hourly
// leaves it just before it is written anew: a month of checks, then a
// record a render (one check in, one out) until the next would take the
// file past what olderChange lets it weigh (olderSlack). Each record drops
// the oldest check, so a reader that moved the checks it keeps down at
// each record did a month of checks' work as many times.
func steadyOlderLog(tb testing.TB) (log, fresh []byte) {
	tb.Helper()
	all := hourly(fixNow.Add(-90*24*time.Hour).UnixMilli(), 3000)
	lo, hi := 0, 720
	file := encodeOlder(all[lo:hi])
	for {
		old, err := readOlder(file)
		if err != nil {
			tb.Fatal(err)
		}
		b, whole := olderChange(old, all[lo+1:hi+1])
		if whole {
			return file, encodeOlder(all[lo:hi])
		}
		file, lo, hi = append(file[:old.end], b...), lo+1, hi+1
	}
}

// BenchmarkReadOlder reads an older-checks file of a month of hourly
// checks and the records appended since it was written anew, the most it
// holds (steadyOlderLog); BenchmarkBaselineReadOlder reads the
// same checks written anew, one record: the ratio is what the records
// cost a render that reads them.
func BenchmarkReadOlder(b *testing.B) {
	log, _ := steadyOlderLog(b)
	benchReadOlder(b, log)
}

func BenchmarkBaselineReadOlder(b *testing.B) {
	_, fresh := steadyOlderLog(b)
	benchReadOlder(b, fresh)
}

func benchReadOlder(b *testing.B, file []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(file)))
	for b.Loop() {
		if _, err := readOlder(file); err != nil {
			b.Fatal(err)
		}
	}
}
