package data

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// t0 is the domain tests' clock: datatest cannot be imported here, it imports data.
var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// TestResultBound holds Result.Bound to its promises on hostile answers:
// the encoding stays under MaxRecordedBytes, each cut text ends with the
// marker and stays valid UTF-8, the tool count stays exact, and a result
// within the bounds is left as it is (issue 10 point 3).
func TestResultBound(t *testing.T) {
	manyTools := make([]string, 10_000)
	for i := range manyTools {
		manyTools[i] = fmt.Sprintf("tool_%05d_%s", i, strings.Repeat("x", 1000))
	}
	cases := []struct {
		name  string
		r     Result
		check func(t *testing.T, r Result)
	}{
		{"name_of_a_million_lt", Result{ServerName: strings.Repeat("<", 1_000_000)}, func(t *testing.T, r Result) {
			if !strings.HasSuffix(r.ServerName, TruncatedMarker) || strings.Trim(strings.TrimSuffix(r.ServerName, TruncatedMarker), "<") != "" {
				t.Errorf("name %.40q... not cut to '<' and the marker", r.ServerName)
			}
		}},
		{"ten_MB_of_tool_names", Result{ToolCount: len(manyTools), Tools: manyTools}, func(t *testing.T, r Result) {
			if r.ToolCount != 10_000 || len(r.Tools) == 0 || len(r.Tools) > MaxToolNames {
				t.Errorf("tool count %d, %d names kept; want 10000 and 1..%d", r.ToolCount, len(r.Tools), MaxToolNames)
			}
			if !strings.HasPrefix(r.Tools[0], "tool_00000_") || !strings.HasSuffix(r.Tools[0], TruncatedMarker) {
				t.Errorf("first tool %q: want its start and the marker", r.Tools[0])
			}
			if manyTools[0] != fmt.Sprintf("tool_%05d_%s", 0, strings.Repeat("x", 1000)) {
				t.Error("Bound changed the caller's tool names")
			}
		}},
		{"names_past_the_count", Result{ToolCount: 1, Tools: []string{"a", "b"}}, func(t *testing.T, r Result) {
			if r.ToolCount != 2 {
				t.Errorf("tool count %d, want 2", r.ToolCount)
			}
		}},
		{"invalid_utf8_and_controls", Result{Detail: strings.Repeat("\xff\x01é", 5000), ServerVersion: strings.Repeat("\u2028", 5000)}, func(t *testing.T, r Result) {
			if !utf8.ValidString(strings.ToValidUTF8(r.Detail, "")) || !strings.HasSuffix(r.Detail, TruncatedMarker) {
				t.Errorf("detail %.40q... not cut with the marker", r.Detail)
			}
		}},
		{"certificate_of_ten_thousand_names", Result{TLS: &TLSInfo{Issuer: strings.Repeat("&", 100_000), Names: manyTools},
			Timings: &Timings{FirstByte: make([]time.Duration, 1000)}, Support: &ProtocolSupport{Versions: manyTools}}, func(t *testing.T, r Result) {
			if n := len(r.Support.Versions); n == 0 || n > MaxDiscoverVersions {
				t.Errorf("%d discover versions kept, want 1..%d (issue 19 point 3)", n, MaxDiscoverVersions)
			}
			if n := len(r.TLS.Names); n == 0 || n > MaxCertNames || !strings.HasSuffix(r.TLS.Issuer, TruncatedMarker) {
				t.Errorf("%d names kept, issuer %.20q...; want 1..%d and the marker", n, r.TLS.Issuer, MaxCertNames)
			}
			if len(r.Timings.FirstByte) != MaxFirstBytes {
				t.Errorf("%d first-byte times kept, want %d", len(r.Timings.FirstByte), MaxFirstBytes)
			}
		}},
		{"within_bounds_unchanged", Result{ServerName: "demo <server>", Tools: []string{"a", "b"}, ToolCount: 2, Detail: "2 tools"}, func(t *testing.T, r Result) {
			if r.ServerName != "demo <server>" || len(r.Tools) != 2 || r.Detail != "2 tools" {
				t.Errorf("bounded result changed: %+v", r)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.r
			r.ID, r.Status, r.Started = "s1", Working, t0
			r.Bound()
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > MaxRecordedBytes {
				t.Errorf("bounded result encodes in %d bytes, over %d", len(b), MaxRecordedBytes)
			}
			c.check(t, r)
			again := r
			again.Tools = append([]string(nil), r.Tools...)
			again.Bound()
			if b2, _ := json.Marshal(again); string(b2) != string(b) {
				t.Error("bounding a bounded result changed it")
			}
		})
	}
}

// TestJSONLen holds jsonLen to what encoding/json writes.
func TestJSONLen(t *testing.T) {
	for _, s := range []string{"", "abc", `"\`, "<>&", "\n\r\t\x00\x1f\b\f", "é€𝄞", "\u2028\u2029", "\xff\xfe", "\ufffd"} {
		b, _ := json.Marshal(s)
		if got, want := jsonLen(s), len(b)-2; got < want || got > want+4*strings.Count(s, "\b")+4*strings.Count(s, "\f") {
			t.Errorf("jsonLen(%q) = %d, encoding/json writes %d", s, got, want)
		}
	}
}
