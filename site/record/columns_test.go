package record

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
)

// columnCases are columns written and read in the tests below: full ones,
// small ones, empty and nil ones, and strings encoding/json escapes.
func columnCases() (hs []historyColumns, ds []dailyColumns) {
	h, d := benchColumns()
	odd := "<b>&\"quoted\"\\ \n\t\u2028 é \x7f \xff"
	// one byte encoding/json escapes or may, a string each
	lt, gt, amp, quote, back, ctl, del, accent, sep, bad := "a<", "a>", "a&", `a"`, `a\`, "a\x01", "a\x7f", "é", "\u2028", "\xff"
	big, small := int64(math.MaxInt64), int64(math.MinInt64)
	hs = []historyColumns{
		columnsOf(h), columnsOf(h[:3]), columnsOf(History{}), {},
		{Started: []Time{{time.Date(2026, 2, 28, 23, 59, 59, 999e6, time.UTC)}}, Status: []data.Outcome{""}, Detail: []*string{&odd, &lt, &gt, &amp, &quote, &back, &ctl, &del, &accent, &sep, &bad},
			Latency: []*int64{&big}, Timings: checkPhaseColumns{DNS: []*int64{&small}, Connect: []*int64{nil}, TLS: []*int64{}, Wait: nil}},
	}
	ds = []dailyColumns{dailyColumnsOf(d), dailyColumnsOf(d[85:]), dailyColumnsOf(DailySeries{}), {},
		{From: odd, Days: -3, Unlisted: [][2]int{{-1, 2}}, Day: []int{0}, P50: []*int64{&small}, P95: []*int64{&big}}}
	return hs, ds
}

// TestColumnsWrittenAsEncodingJSON: the columns written by hand are the
// bytes encoding/json writes of them, so that every file published stays
// as it was.
func TestColumnsWrittenAsEncodingJSON(t *testing.T) {
	hs, ds := columnCases()
	var cases []struct {
		hand func([]byte) []byte
		v    any
	}
	for i := range hs {
		cases = append(cases, struct {
			hand func([]byte) []byte
			v    any
		}{hs[i].appendJSON, hs[i]})
	}
	for i := range ds {
		cases = append(cases, struct {
			hand func([]byte) []byte
			v    any
		}{ds[i].appendJSON, ds[i]})
	}
	for i, c := range cases {
		want, err := json.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.hand([]byte("x")); !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Errorf("case %d written as\n%s\nencoding/json writes\n%s", i, got[1:], want)
		}
	}
}

// TestColumnsReadAsEncodingJSON: what the hand reader takes, it reads as
// encoding/json does, and it takes the form it writes, whitespace or not.
// Every input with a byte changed, removed or a space added is tried:
// each one it takes must be one encoding/json reads the same.
func TestColumnsReadAsEncodingJSON(t *testing.T) {
	hs, ds := columnCases()
	var canon [][]byte // as MarshalJSON writes them: the first three of each
	for i := range hs[:3] {
		canon = append(canon, hs[i].appendJSON(nil))
	}
	for i := range ds[:3] {
		canon = append(canon, ds[i].appendJSON(nil))
	}
	for i, b := range canon {
		var ind bytes.Buffer
		if err := json.Indent(&ind, b, "", "\t"); err != nil {
			t.Fatal(err)
		}
		for _, in := range [][]byte{b, ind.Bytes()} {
			if fast := readBoth(t, in); fast == 0 {
				t.Errorf("case %d: the form the columns are written in is left to encoding/json:\n%.200s", i, in)
			}
		}
	}
	taken, tried := 0, 0
	for _, b := range [][]byte{canon[1], canon[4]} { // three checks; the last five days
		for i := range b {
			for _, v := range oneByteChanged(b, i, " 0159-.eE\"\\,[]{}:nul\xff") {
				taken += readBoth(t, v)
				tried += 2
			}
		}
	}
	t.Logf("hand reader took %d of %d inputs with a byte changed", taken, tried)
	if taken == 0 {
		t.Error("the hand reader took no input with a byte changed: not even a space or another digit")
	}
}

// oneByteChanged returns b with its i-th byte removed, with a space
// before it, and with it replaced by each byte of with.
func oneByteChanged(b []byte, i int, with string) [][]byte {
	vs := [][]byte{slices.Concat(b[:i], b[i+1:]), slices.Concat(b[:i], []byte(" "), b[i:])}
	for _, c := range []byte(with) {
		v := bytes.Clone(b)
		v[i] = c
		vs = append(vs, v)
	}
	return vs
}

// TestColumnsReadOtherForms: forms the hand reader leaves to
// encoding/json are read, or refused, as before.
func TestColumnsReadOtherForms(t *testing.T) {
	hist := func(started, status, reason, latency string) string {
		return `{"started":` + started + `,"status":` + status + `,"reason":` + reason + `,"latency_ms":` + latency +
			`,"timings":{"dns_ms":[null],"connect_ms":[null],"tls_ms":[null],"wait_ms":[null]}}`
	}
	t0, ok := `["2026-12-02T11:00:00.000Z"]`, `["working"]`
	for _, c := range []struct {
		name, in string
		fast     bool // the hand reader takes it
		ok       bool // encoding/json reads it
	}{
		{"written_form", hist(t0, ok, `[null]`, `[1]`), true, true},
		{"negative_zero", hist(t0, ok, `[null]`, `[-0]`), true, true},
		{"largest_taken_by_hand", hist(t0, ok, `[null]`, `[999999999999999999]`), true, true},
		{"max_int64", hist(t0, ok, `[null]`, `[9223372036854775807]`), false, true},
		{"past_int64", hist(t0, ok, `[null]`, `[9223372036854775808]`), false, false},
		{"fraction", hist(t0, ok, `[null]`, `[1.5]`), false, false},
		{"exponent", hist(t0, ok, `[null]`, `[1e2]`), false, false},
		{"leading_zero", hist(t0, ok, `[null]`, `[01]`), false, false},
		{"null_column", hist(t0, ok, `[null]`, `null`), false, true},
		{"time_without_millis", hist(`["2026-12-02T11:00:00Z"]`, ok, `[null]`, `[1]`), false, true},
		{"time_with_offset", hist(`["2026-12-02T12:00:00.000+01:00"]`, ok, `[null]`, `[1]`), false, true},
		{"time_null", hist(`[null]`, ok, `[null]`, `[1]`), false, true},
		{"february_30", hist(`["2026-02-30T11:00:00.000Z"]`, ok, `[null]`, `[1]`), false, false},
		{"february_29_leap", hist(`["2028-02-29T11:00:00.000Z"]`, ok, `[null]`, `[1]`), true, true},
		{"hour_24", hist(`["2026-12-02T24:00:00.000Z"]`, ok, `[null]`, `[1]`), false, false},
		{"second_60", hist(`["2026-12-02T11:00:60.000Z"]`, ok, `[null]`, `[1]`), false, false},
		{"unknown_status", hist(t0, `["bogus"]`, `[null]`, `[1]`), false, false},
		{"no_status", hist(t0, `[""]`, `[null]`, `[1]`), true, true},
		{"escaped_reason", hist(t0, ok, `["a\u0041\n"]`, `[1]`), false, true},
		{"escaped_status", hist(t0, `["work\u0069ng"]`, `[null]`, `[1]`), true, true}, // read as the rest of the file reads a status
		{"raw_invalid_utf8", hist(t0, ok, "[\"a\xffb\"]", `[1]`), false, true},
		{"trailing_bytes", hist(t0, ok, `[null]`, `[1]`) + "x", false, false},
		{"keys_reordered", `{"status":["working"],` + strings.TrimPrefix(hist(t0, ok, `[null]`, `[1]`), `{`), false, true},
		{"unknown_key", strings.Replace(hist(t0, ok, `[null]`, `[1]`), `"status"`, `"extra":{"a":[1]},"status"`, 1), false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var h historyColumns
			if fast := h.scan([]byte(c.in)); fast != c.fast {
				t.Errorf("hand reader took it: %v, want %v", fast, c.fast)
			}
			var ref historyColumns
			if err := json.Unmarshal([]byte(c.in), &ref); (err == nil) != c.ok {
				t.Errorf("encoding/json read it: %v, want %v", err, c.ok)
			}
			readBoth(t, []byte(c.in))
		})
	}
	daily := func(unlisted string) string {
		e := `{"p50":[],"p95":[]}`
		return `{"from":"2026-12-01","days":3,"unlisted":` + unlisted + `,"day":[],"counted":[],"answered":[],"latency_p50_ms":[],"latency_p95_ms":[],` +
			`"phases":{"dns_ms":` + e + `,"connect_ms":` + e + `,"tls_ms":` + e + `,"wait_ms":` + e + `}}`
	}
	for _, c := range []struct {
		in   string
		fast bool
	}{{daily(`[[0,1]]`), true}, {daily(`[[0]]`), false}, {daily(`[[0,1,2]]`), false}, {daily(`[null]`), false}} {
		var d dailyColumns
		if fast := d.scan([]byte(c.in)); fast != c.fast {
			t.Errorf("%s: hand reader took it: %v, want %v", c.in, fast, c.fast)
		}
		readBoth(t, []byte(c.in))
	}
}

// FuzzColumnsRead: whatever the hand reader takes, encoding/json reads the
// same.
func FuzzColumnsRead(f *testing.F) {
	hs, ds := columnCases()
	for i := range hs {
		f.Add(hs[i].appendJSON(nil))
	}
	for i := range ds {
		f.Add(ds[i].appendJSON(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) { readBoth(t, b) })
}

// readBoth reads b as history and as daily columns, by hand and with
// encoding/json, and fails t if the hand reader took something
// encoding/json refuses or reads otherwise. It returns how many of the two
// the hand reader took.
func readBoth(t *testing.T, b []byte) int {
	t.Helper()
	taken := 0
	var h, href historyColumns
	if h.scan(b) {
		taken++
		if err := json.Unmarshal(b, &href); err != nil || !reflect.DeepEqual(h, href) {
			t.Errorf("history columns read by hand as\n%+v\nby encoding/json as\n%+v, %v\nfrom %q", h, href, err, b)
		}
	}
	var d, dref dailyColumns
	if d.scan(b) {
		taken++
		if err := json.Unmarshal(b, &dref); err != nil || !reflect.DeepEqual(d, dref) {
			t.Errorf("daily columns read by hand as\n%+v\nby encoding/json as\n%+v, %v\nfrom %q", d, dref, err, b)
		}
	}
	return taken
}
