package data

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
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
// within the bounds is left as it is.
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
				t.Errorf("%d discover versions kept, want 1..%d", n, MaxDiscoverVersions)
			}
			if n := len(r.TLS.Names); n == 0 || n > MaxCertNames || !strings.HasSuffix(r.TLS.Issuer, TruncatedMarker) {
				t.Errorf("%d names kept, issuer %.20q...; want 1..%d and the marker", n, r.TLS.Issuer, MaxCertNames)
			}
			if len(r.Timings.FirstByte) != MaxFirstBytes {
				t.Errorf("%d first-byte times kept, want %d", len(r.Timings.FirstByte), MaxFirstBytes)
			}
		}},
		{"three_problems_of_a_100KB_name", Result{ToolProblems: []ToolProblem{
			{Tool: strings.Repeat("<", 100_000), Rule: ToolRuleName, Message: "name " + strings.Repeat("<", 100_000)},
			{Tool: strings.Repeat("<", 100_000), Rule: ToolRuleNoDescription, Message: "no description"},
			{Tool: strings.Repeat("<", 100_000), Rule: ToolRuleInputSchema, Message: "no inputSchema"}}}, func(t *testing.T, r Result) {
			if len(r.ToolProblems) != 3 {
				t.Fatalf("%d tool problems kept, want the 3", len(r.ToolProblems))
			}
			for _, p := range r.ToolProblems {
				if !strings.HasSuffix(p.Tool, TruncatedMarker) || jsonLen(p.Tool) > MaxToolNameBytes || jsonLen(p.Message) > MaxToolProblemBytes {
					t.Errorf("problem %s: tool of %d bytes, message of %d; want them cut with the marker", p.Rule, jsonLen(p.Tool), jsonLen(p.Message))
				}
			}
		}},
		{"the_budget_note_kept_last", Result{ToolProblems: append(slices.Repeat([]ToolProblem{{Tool: "t", Rule: ToolRuleInputSchema, Message: strings.Repeat("m", 400)}}, 99),
			ToolProblem{Rule: ToolRuleBudget, Message: "the lint's budget left 900 tools unchecked"})}, func(t *testing.T, r Result) {
			n := len(r.ToolProblems)
			if n < 2 || n == 100 || r.ToolProblems[n-1].Rule != ToolRuleBudget {
				t.Errorf("%d tool problems kept, the last %+v; want some cut for size and the budget's note last", n, r.ToolProblems[n-1])
			}
		}},
		{"what_it_says_of_itself", Result{ServerTitle: strings.Repeat("<", 1_000_000), ServerDescription: strings.Repeat("&", 1_000_000),
			ServerWebsite: "https://example.com/" + strings.Repeat("<", MaxLinkBytes/6), KeyInfo: "javascript:alert(1)"}, func(t *testing.T, r Result) {
			if !strings.HasSuffix(r.ServerTitle, TruncatedMarker) || !strings.HasSuffix(r.ServerDescription, TruncatedMarker) {
				t.Errorf("title %.20q..., description %.20q...: not cut with the marker", r.ServerTitle, r.ServerDescription)
			}
			if r.ServerWebsite != "" || r.KeyInfo != "" {
				t.Errorf("website %.40q, key info %q: a link too long or not https kept", r.ServerWebsite, r.KeyInfo)
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

// recordBudget is the most bytes each field of a bounded result may take in
// its JSON encoding (its value, quotes and brackets included), by its path
// of JSON names. TestResultBoundEveryField fails for a field of Result that
// is not here, so a field added later cannot escape the bound: give it a
// bound in Result.Bound, and its budget here.
var recordBudget = map[string]int{
	"id": MaxIDBytes*6 + 2, "url": MaxAddressBytes*6 + 2, "host": MaxNameBytes + 2, "reason": MaxNameBytes + 2,
	"status": MaxNameBytes + 2, "detail": MaxDetailBytes + 2, "http_status": 20, "protocol": MaxNameBytes + 2,
	"transport": MaxNameBytes + 2, "server_name": MaxNameBytes + 2, "server_version": MaxNameBytes + 2, "tool_count": 20,
	"server_title": MaxNameBytes + 2, "server_description": MaxDetailBytes + 2, "server_website": MaxLinkBytes + 2, "key_info": MaxLinkBytes + 2,
	"tools": MaxToolNamesBytes + 2, "tools_hash": MaxNameBytes + 2, "tool_problems": MaxToolProblemsBytes + 2,
	"planned": 40, "started": 40, "finished": 40, "lateness": 20, "duration": 20, "requests": 20, "conns": 20,
	"bytes_read": 20, "retry_after": 40, "prober_version": MaxNameBytes + 2,
	"tls.version": MaxNameBytes + 2, "tls.not_after": 40, "tls.issuer": MaxNameBytes + 2, "tls.names": MaxCertNamesBytes + 2,
	"timings.dns": 20, "timings.connect": 20, "timings.tls": 20, "timings.first_byte": MaxFirstBytes*21 + 2,
	"protocol_support.versions": maxDiscoverVersionsBytes + 2, "protocol_support.session": 5, "protocol_support.answers": MaxNameBytes + 2,
}

// hostile fills v, through pointers and structs, with the worst a server
// could make of each field: texts of 20,000 '<' (120 KB encoded, over any
// budget), lists of 600 such entries (past every count kept), the largest
// numbers.
func hostile(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(strings.Repeat("<", 20_000))
	case reflect.Int, reflect.Int64:
		v.SetInt(math.MaxInt64)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		hostile(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 600, 600))
		for i := range v.Len() {
			hostile(v.Index(i))
		}
	case reflect.Struct:
		if t, ok := v.Addr().Interface().(*time.Time); ok {
			*t = time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.FixedZone("", -12*3600))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				hostile(v.Field(i))
			}
		}
	}
}

// TestResultBoundEveryField fills every field of a Result, through
// reflection, with the worst a server could send, bounds it, and holds each
// field's encoding to its budget in recordBudget, the budgets' sum to
// MaxRecordedBytes, and the whole encoding to MaxRecordedBytes (before:
// three tool problems that each carried a tool name of 100 KB of
// '<' made a journal line of 1.8 MB, the reader's limit being 1 MB).
func TestResultBoundEveryField(t *testing.T) {
	var r Result
	hostile(reflect.ValueOf(&r).Elem())
	r.Bound()
	seen := map[string]bool{}
	sum := 2 // the braces
	var walk func(prefix string, v reflect.Value)
	walk = func(prefix string, v reflect.Value) {
		for i := range v.NumField() {
			f := v.Type().Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			path := prefix + name
			fv := v.Field(i)
			if fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.Struct {
				sum += len(name) + 6 // "name":{},
				walk(path+".", fv.Elem())
				continue
			}
			seen[path] = true
			budget, ok := recordBudget[path]
			if !ok {
				t.Errorf("field %s has no budget: bound it in Result.Bound and give it one in recordBudget", path)
				continue
			}
			sum += budget + len(name) + 4 // "name":…,
			b, err := json.Marshal(fv.Interface())
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > budget {
				t.Errorf("field %s encodes in %d bytes after Bound, over its budget of %d", path, len(b), budget)
			}
		}
	}
	walk("", reflect.ValueOf(r))
	for path := range recordBudget {
		if !seen[path] {
			t.Errorf("recordBudget names %s, which Result does not have", path)
		}
	}
	if sum > MaxRecordedBytes {
		t.Errorf("the budgets add up to %d bytes, over MaxRecordedBytes %d", sum, MaxRecordedBytes)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > MaxRecordedBytes {
		t.Errorf("the worst result encodes in %d bytes after Bound, over %d", len(b), MaxRecordedBytes)
	}
	t.Logf("worst bounded result: %d bytes; budgets sum to %d of %d", len(b), sum, MaxRecordedBytes)
}
