package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"plug.directory/prober/data"
)

// hostileNames answers as a 2025-06-18 MCP server whose name, version and
// tool names carry terminal escape sequences, counting the requests it
// received.
func hostileNames(seen *atomic.Int32) mcpServer {
	return mcpServer{seen: seen, serverInfo: `{"name":"evil\u001b]0;owned\u0007","version":"1\u001b[2J\u009b31m"}`,
		tools: `[{"name":"rm\u001b[1A\r-rf","inputSchema":{"type":"object"}},{"name":"txt\u202egnp.exe","inputSchema":{"type":"object"}}]`}
}

// TestOneOffText_escapes_control_characters proves that run -url's text
// shows a server's name, version and tool names with their control
// characters escaped: nothing a server says reaches the owner's terminal as
// an escape sequence. The JSON keeps them as received (JSON escapes them).
func TestOneOffText_escapes_control_characters(t *testing.T) {
	t.Parallel()
	var seen atomic.Int32
	s := startServer(t, hostileNames(&seen))
	code, out, errOut := runArgs(t, "-lab", "-resolve", s.resolve, "-ca-file", s.caFile, "-url", s.url)
	if code != 0 {
		t.Fatalf("exit %d, want 0; stderr %s; stdout:\n%s", code, errOut, out)
	}
	if got := seen.Load(); got != 4 {
		t.Errorf("server received %d requests, want 4 (discover, initialize, initialized, tools/list)", got)
	}
	for _, r := range out {
		if r != '\n' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x202e) {
			t.Fatalf("output carries control character %U:\n%q", r, out)
		}
	}
	for _, want := range []string{`evil\x1b]0;owned\x07`, `1\x1b[2J\x9b31m`, `rm\x1b[1A\x0d-rf`, `txt\u202egnp.exe`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
}

// counted wraps h, counting the requests it receives.
func counted(seen *atomic.Int32, h http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		h.ServeHTTP(w, r)
	}
}

// legacySSE is a 2024-11-05 HTTP+SSE server: GET /sse opens the stream and
// names /messages in its endpoint event; POST /sse is a 405; answers to the
// posts go to the stream.
func legacySSE() http.HandlerFunc {
	answers := make(chan string, 8)
	return func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/sse":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: endpoint\ndata: /messages?session_id=1\n\n")
			w.(http.Flusher).Flush()
			for {
				select {
				case <-r.Context().Done():
					return
				case a := <-answers:
					fmt.Fprintf(w, "event: message\ndata: %s\n\n", a)
					w.(http.Flusher).Flush()
				}
			}
		case r.Method == http.MethodPost && r.URL.Path == "/messages":
			var m struct {
				Method string          `json:"method"`
				ID     json.RawMessage `json:"id"`
			}
			json.NewDecoder(r.Body).Decode(&m)
			w.WriteHeader(http.StatusAccepted)
			switch m.Method {
			case "initialize":
				answers <- fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"old","version":"0.1"}}}`, m.ID)
			case "tools/list":
				answers <- fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"forecast","inputSchema":{"type":"object"}}]}}`, m.ID)
			}
		default:
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		}
	}
}

// mustOneOffSchema reads and resolves testdata/oneoff.schema.json, the
// schema of run -url -json.
func mustOneOffSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "oneoff.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatalf("parse schema: %v", err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		t.Fatalf("resolve schema: %v", err)
	}
	return resolved
}

// TestOneOffJSON proves that run -url -json is the complete record for an
// owner: it validates against
// testdata/oneoff.schema.json, has one "reason" (the outcome's), null for
// what does not apply, milliseconds only, and carries the dialled address,
// the TLS session and certificate, the answer headers that matter, the start
// of an error body and the SSE events seen. Each server counts the
// requests it received, and the JSON says the same number.
func TestOneOffJSON(t *testing.T) {
	t.Parallel()
	resolved := mustOneOffSchema(t)
	// The schema refuses what the old output had: a nested result, a zero
	// time for "none".
	for _, bad := range []string{`{"result":{}}`, `{"retry_after":"0001-01-01T00:00:00Z"}`} {
		var inst any
		json.Unmarshal([]byte(bad), &inst)
		if resolved.Validate(inst) == nil {
			t.Errorf("the schema accepts %s", bad)
		}
	}
	const bearer = `Bearer resource_metadata="https://mcp.test:8443/.well-known/oauth-protected-resource"`
	cases := []struct {
		name     string
		handler  http.Handler
		path     string
		code     int
		requests int32
		check    func(t *testing.T, out map[string]any, ex []map[string]any)
	}{
		{
			name: "O_working", handler: mcpHandler(0), code: 0, requests: 4,
			check: func(t *testing.T, out map[string]any, ex []map[string]any) {
				for _, k := range []string{"result", "planned", "duration", "lateness"} {
					if _, ok := out[k]; ok {
						t.Errorf("key %q in the output", k)
					}
				}
				if out["retry_after"] != nil || out["http_status"] != float64(200) || out["reason"] != "1 tool" {
					t.Errorf("retry_after %v, http_status %v, reason %v", out["retry_after"], out["http_status"], out["reason"])
				}
				if h := ex[0]["headers"].(map[string]any); h["Content-Type"] != "application/json" {
					t.Errorf("headers %v, want the Content-Type", h)
				}
				// How it spoke: an initialize-era raw server, no session id, JSON answers
				if out["discover_versions"] != nil || out["session"] != false || out["answers"] != "json" {
					t.Errorf("discover_versions %v, session %v, answers %v; want null, false, json", out["discover_versions"], out["session"], out["answers"])
				}
			},
		},
		{
			name: "O_needs_key_401", code: 0, requests: 1,
			handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("WWW-Authenticate", bearer)
				http.Error(w, `{"error":"invalid_token","error_description":"no token"}`, http.StatusUnauthorized)
			}),
			check: func(t *testing.T, out map[string]any, ex []map[string]any) {
				if h := ex[0]["headers"].(map[string]any); h["WWW-Authenticate"] != bearer {
					t.Errorf("headers %v, want the WWW-Authenticate challenge", h)
				}
				if b, _ := ex[0]["error_body"].(string); !strings.Contains(b, "invalid_token") {
					t.Errorf("error_body %q, want the answer's body", b)
				}
			},
		},
		{
			name: "O_refused_429_retry_after", code: 1, requests: 1,
			handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "120")
				http.Error(w, "slow down", http.StatusTooManyRequests)
			}),
			check: func(t *testing.T, out map[string]any, ex []map[string]any) {
				if out["retry_after"] == nil || ex[0]["headers"].(map[string]any)["Retry-After"] != "120" {
					t.Errorf("retry_after %v, headers %v", out["retry_after"], ex[0]["headers"])
				}
			},
		},
		{
			name: "O_failing_500_error_body", code: 1, requests: 2,
			handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Mcp-Session-Id", "abc")
				http.Error(w, "upstream exploded: "+strings.Repeat("x", 2000), http.StatusInternalServerError)
			}),
			check: func(t *testing.T, out map[string]any, ex []map[string]any) {
				b, _ := ex[0]["error_body"].(string)
				if !strings.HasPrefix(b, "upstream exploded: xxx") || len(b) != 512 {
					t.Errorf("error_body %d bytes %.40q, want the first 512", len(b), b)
				}
				if ex[0]["mcp_session_id"] != true {
					t.Errorf("mcp_session_id %v, want true", ex[0]["mcp_session_id"])
				}
			},
		},
		{
			name: "N4_legacy_sse_events", handler: legacySSE(), path: "/sse", code: 0, requests: 5,
			check: func(t *testing.T, out map[string]any, ex []map[string]any) {
				var get map[string]any
				for _, e := range ex {
					if e["method"] == "GET" {
						get = e
					}
				}
				events, _ := get["sse_events"].([]any)
				if len(events) == 0 {
					t.Fatalf("GET %v: no sse_events", get)
				}
				first := events[0].(map[string]any)
				if first["event"] != "endpoint" || first["data"] != "/messages?session_id=1" {
					t.Errorf("first event %v, want the endpoint", first)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var seen atomic.Int32
			s := startServer(t, counted(&seen, c.handler))
			u := strings.TrimSuffix(s.url, "/mcp") + cmp.Or(c.path, "/mcp")
			code, stdout, errOut := runArgs(t, "-lab", "-resolve", s.resolve, "-ca-file", s.caFile, "-url", u, "-json")
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr %s; stdout:\n%s", code, c.code, errOut, stdout)
			}
			var instance any
			if err := json.Unmarshal([]byte(stdout), &instance); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, stdout)
			}
			if err := resolved.Validate(instance); err != nil {
				t.Fatalf("output does not follow testdata/oneoff.schema.json: %v\n%s", err, stdout)
			}
			out := instance.(map[string]any)
			// What does not apply is null, never "" or 0: the
			// schema refuses this very output with one of them.
			for k, empty := range map[string]any{"http_status": float64(0), "protocol": "", "server_name": "", "url": ""} {
				old := out[k]
				out[k] = empty
				if resolved.Validate(instance) == nil {
					t.Errorf("the schema accepts %s = %#v", k, empty)
				}
				out[k] = old
			}
			if got := seen.Load(); got != c.requests || out["requests"] != float64(got) {
				t.Errorf("server received %d requests, the output says %v, want %d", got, out["requests"], c.requests)
			}
			var ex []map[string]any
			for _, e := range out["transcript"].([]any) {
				ex = append(ex, e.(map[string]any))
			}
			conns := out["connections"].([]any)
			if len(conns) == 0 {
				t.Fatalf("no connections in\n%s", stdout)
			}
			conn := conns[0].(map[string]any)
			addr := strings.TrimPrefix(s.resolve, "mcp.test:8443:") + ":8443"
			if conn["remote_addr"] != addr || conn["tls_version"] != "TLS 1.3" || conn["cert_subject"] != "CN=mcp.test" ||
				conn["cert_issuer"] != "CN=prober test CA" || conn["cert_not_after"] == nil {
				t.Errorf("connection %v, want %s over TLS 1.3 with mcp.test's certificate", conn, addr)
			}
			if ex[0]["conn"] != float64(1) {
				t.Errorf("first request on connection %v, want 1", ex[0]["conn"])
			}
			c.check(t, out, ex)
		})
	}
}

// TestOneOffText_connection_and_error_body proves that the text form,
// kept short, names the address dialled, the TLS session and certificate,
// and the start of the last error answer, escaped.
func TestOneOffText_connection_and_error_body(t *testing.T) {
	t.Parallel()
	var seen atomic.Int32
	s := startServer(t, counted(&seen, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream exploded\x1b[2J", http.StatusBadGateway)
	})))
	code, out, _ := runArgs(t, "-lab", "-resolve", s.resolve, "-ca-file", s.caFile, "-url", s.url)
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	if got := seen.Load(); got != 2 {
		t.Errorf("server received %d requests, want 2 (discover, initialize)", got)
	}
	addr := strings.TrimPrefix(s.resolve, "mcp.test:8443:") + ":8443"
	for _, want := range []string{"connection 1 " + addr + ", TLS 1.3", "certificate CN=mcp.test, expires 20",
		`error body upstream exploded\x1b[2J\x0a`} {
		if !strings.Contains(squeeze(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestOneOffText_tool_problems proves the tool lint where an owner
// debugging looks first: run -url names each tool problem under the tools,
// the status stays working, and the server received the requests of a
// plain check and no more.
func TestOneOffText_tool_problems(t *testing.T) {
	t.Parallel()
	var seen atomic.Int32
	s := startServer(t, mcpServer{seen: &seen, serverInfo: `{"name":"demo","version":"1.0"}`,
		tools: `[{"name":"bad name!","inputSchema":{"type":"object"}},{"name":"ok","description":"fine","inputSchema":{"type":"object"}}]`})
	code, out, errOut := runArgs(t, "-lab", "-resolve", s.resolve, "-ca-file", s.caFile, "-url", s.url)
	if code != 0 {
		t.Fatalf("exit %d, want 0; stderr %s; stdout:\n%s", code, errOut, out)
	}
	if got := seen.Load(); got != 4 {
		t.Errorf("server received %d requests, want 4 (discover, initialize, initialized, tools/list)", got)
	}
	for _, want := range []string{"working", "tool problems", "2 problems that clients reject or mishandle (advice: still working)",
		`bad name!: name has " " at byte 3`, "no_description"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestOneOffCertificateDays: run -url counts a certificate's days in
// calendar days, in its text and its JSON alike: a certificate valid to
// 9999-12-31 has millions of days left (not a saturated -106751), one
// that expires the day after tomorrow reads "expires in 2 days" even less
// than 48 hours before.
func TestOneOffCertificateDays(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 4, 18, 0, 0, 0, time.UTC)
	cases := []struct {
		name     string
		notAfter time.Time
		days     int
		text     string
	}{
		{"no_expiry_9999", time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), 2912105, "expires in 2912105 days 9999-12-31T23:59:59Z"},
		{"two_days", time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC), 2, "expires in 2 days 2026-12-06T09:00:00Z"},
		{"tomorrow", time.Date(2026, 12, 5, 23, 0, 0, 0, time.UTC), 1, "expires tomorrow 2026-12-05T23:00:00Z"},
		{"today", time.Date(2026, 12, 4, 23, 0, 0, 0, time.UTC), 0, "expires today 2026-12-04T23:00:00Z"},
		{"expired", time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC), 0, "expired 2026-12-04T17:00:00Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := data.Result{TLS: &data.TLSInfo{Version: "TLS 1.3", NotAfter: tc.notAfter, Issuer: "CN=test", Names: []string{"mcp.test"}}}
			tj, _ := factsJSON(res, now)
			if tj == nil || tj.DaysLeft != tc.days {
				t.Errorf("-json tls %+v, want %d days left", tj, tc.days)
			}
			if cert, _ := factsText(res, now); !strings.HasPrefix(cert, tc.text+", TLS 1.3") {
				t.Errorf("text %q, want it to start %q", cert, tc.text)
			}
		})
	}
}

// TestOneOffText_tool_lint_budget proves the lint's budget where an owner
// debugging looks first: run -url names a pattern the lint refused to
// compile, the tools its budget left unchecked, and a tools/list answer
// nested past what the SDK reads, naming tools/list and not the discover
// the check fell back from; run -url -json says the same within its
// schema. Each server received the requests of a plain check, twice, and
// no more.
func TestOneOffText_tool_lint_budget(t *testing.T) {
	t.Parallel()
	resolved := mustOneOffSchema(t)
	many := make([]string, 1003)
	for i := range many {
		many[i] = fmt.Sprintf(`{"name":"t%d","description":"d","inputSchema":{"type":"object"}}`, i)
	}
	deep := strings.Repeat(`{"type":"object","properties":{"x":`, 999) + `{"type":"object"}` + strings.Repeat("}}", 999)
	for _, tc := range []struct {
		name, tools string
		code        int
		want        []string       // in the text, the first one the status
		reason      string         // -json's reason
		problem     map[string]any // one of -json's tool_problems, nil for none
	}{
		{name: "N9_pattern_too_large", code: 0,
			tools: `[{"name":"re","description":"d","inputSchema":{"type":"object","properties":{"q":{"type":"string","pattern":"` + strings.Repeat(`(?:\\pL{1000})`, 400) + `"}}}}]`,
			want:  []string{"working", "input_schema re: pattern too large: not validated (5200 bytes; at most 4096)"}, reason: "1 tool",
			problem: map[string]any{"tool": "re", "rule": "input_schema", "message": "pattern too large: not validated (5200 bytes; at most 4096)"}},
		{name: "N10_lint_budget", code: 0, tools: "[" + strings.Join(many, ",") + "]",
			want: []string{"working", "tools 1003:", "lint_budget lint budget: 3 tools not checked (schemas validated: at most 1000 tools)"}, reason: "1003 tools",
			problem: map[string]any{"tool": "", "rule": "lint_budget", "message": "lint budget: 3 tools not checked (schemas validated: at most 1000 tools)"}},
		{name: "N9_deep_tools_list", code: 1, tools: `[{"name":"deep","description":"d","inputSchema":` + deep + `}]`,
			want:   []string{"failing", "reason protocol error: tools/list answer nests deeper than 1000 levels: the MCP SDK cannot read it"},
			reason: "protocol error: tools/list answer nests deeper than 1000 levels: the MCP SDK cannot read it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var seen atomic.Int32
			s := startServer(t, mcpServer{seen: &seen, serverInfo: `{"name":"demo","version":"1.0"}`, tools: tc.tools})
			code, out, errOut := runArgs(t, "-lab", "-resolve", s.resolve, "-ca-file", s.caFile, "-url", s.url)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %s; stdout:\n%s", code, tc.code, errOut, out)
			}
			if got := seen.Load(); got != 4 {
				t.Errorf("server received %d requests, want 4 (discover, initialize, initialized, tools/list)", got)
			}
			for _, want := range tc.want {
				if !strings.Contains(squeeze(out), want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			code, out, errOut = runArgs(t, "-lab", "-resolve", s.resolve, "-ca-file", s.caFile, "-url", s.url, "-json")
			var instance any
			if err := json.Unmarshal([]byte(out), &instance); code != tc.code || err != nil {
				t.Fatalf("-json: exit %d, %v; stderr %s; stdout:\n%s", code, err, errOut, out)
			}
			if err := resolved.Validate(instance); err != nil {
				t.Errorf("-json output does not follow testdata/oneoff.schema.json: %v", err)
			}
			got := instance.(map[string]any)
			if reason, _ := got["reason"].(string); got["status"] != tc.want[0] || reason != tc.reason {
				t.Errorf("-json status %v, reason %q; want %s, %q", got["status"], reason, tc.want[0], tc.reason)
			}
			problems, _ := got["tool_problems"].([]any)
			if tc.problem != nil && !slices.ContainsFunc(problems, func(p any) bool { return reflect.DeepEqual(p, tc.problem) }) {
				t.Errorf("-json tool_problems lack %v: %.500v", tc.problem, problems)
			}
			if got := seen.Load(); got != 8 {
				t.Errorf("server received %d requests in two checks, want 8", got)
			}
		})
	}
}
