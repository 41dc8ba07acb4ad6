package check

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/testutil"
)

// guardDetail as a case's detail wants the reason to be the guard's detail
// of the exchange it refused.
const guardDetail = "<the guard's detail>"

// checkCase is one server and the outcome a check of it must conclude.
type checkCase struct {
	name    string
	handler http.Handler // the server; nil for cases without one
	opts    serverOpts
	url     string                                 // target URL; "" means the server's /mcp, "-" means none
	mod     func(*testing.T, *Config, *flowServer) // changes the checker's config
	timeout time.Duration                          // 0 means 10 s
	status  data.Outcome                           // want
	detail  string                                 // want, exactly
	seq     []string                               // want: exactly what the server received
	check   func(*testing.T, data.Result, Record)  // further assertions
}

// TestCheck proves table O and rules N1-N10 end to end: each hostile or
// broken server concludes the right outcome and reason, and its recorder
// proves nothing was sent beyond the rules (no DELETE, no response, no ping,
// no cancel, no GET outside legacy SSE, no credential, the exact
// User-Agent).
func TestCheck(t *testing.T) {
	t.Parallel()
	const bearer = `Bearer resource_metadata="https://mcp.test:8443/.well-known/oauth-protected-resource"`
	discover := []string{"POST server/discover"}
	discoverInit := []string{"POST server/discover", "POST initialize"}
	full2025 := []string{"POST server/discover", "POST initialize", "POST notifications/initialized", "POST tools/list"}
	withTools := func(m rpcMux, f rpcFunc) rpcMux { m["tools/list"] = f; return m }
	withInit := func(m rpcMux, f rpcFunc) rpcMux { m["initialize"] = f; return m }
	// The N10 cases' timeout and its detail; make test runs the full one.
	n10, noAnswer := 300*time.Millisecond, "no answer in 0.3 s"
	if testing.Short() {
		n10, noAnswer = 100*time.Millisecond, "no answer in 0.1 s"
	}

	cases := []checkCase{
		{
			name: "O_working_no_tools", handler: legacyMux("2025-06-18"),
			status: data.Working, detail: "no tools", seq: full2025,
			check: func(t *testing.T, res data.Result, _ Record) {
				if res.ToolCount != 0 || res.Tools != nil || res.Protocol != "2025-06-18" || res.ServerName != "raw-server" {
					t.Errorf("result %+v", res)
				}
			},
		},
		{
			name: "O_needs_key_401_bearer", handler: answerWith(401, `{"error":"invalid_token"}`, "WWW-Authenticate", bearer),
			status: data.NeedsKey, detail: "needs a key (OAuth)", seq: discover,
			check: func(t *testing.T, res data.Result, rec Record) {
				wantHTTPStatus(401)(t, res, rec)
				wantKeyInfo("https://mcp.test:8443/.well-known/oauth-protected-resource")(t, res, rec)
			},
		},
		{
			// Where to get a key is shown on a page: never a link that is
			// not https.
			name: "O_needs_key_resource_metadata_not_https", handler: answerWith(401, "", "WWW-Authenticate", `Bearer realm="x", resource_metadata="javascript:alert(1)"`),
			status: data.NeedsKey, detail: "needs a key (OAuth)", seq: discover,
			check: wantKeyInfo(""),
		},
		{
			name: "O_working_website_not_https", seq: full2025, status: data.Working, detail: "no tools",
			handler: streamableHandler(mcp.NewServer(&mcp.Implementation{Name: "x", Version: "1", Title: "<script>", WebsiteURL: "javascript:alert(1)"}, nil), false, false),
			check: func(t *testing.T, res data.Result, _ Record) {
				if res.ServerWebsite != "" || res.ServerTitle != "<script>" {
					t.Errorf("website %q, title %q: want no website (not https) and the title as it was said", res.ServerWebsite, res.ServerTitle)
				}
			},
		},
		{
			name: "O_needs_key_401_basic", handler: answerWith(401, "", "WWW-Authenticate", `Basic realm="mcp"`),
			status: data.NeedsKey, detail: "needs a key (Basic)", seq: discover,
		},
		{
			name: "O_needs_key_401_without_challenge", handler: answerWith(401, "unauthorized"),
			status: data.NeedsKey, detail: "needs a key: HTTP 401", seq: discover,
		},
		{
			name: "O_needs_key_401_only_at_tools_list",
			handler: withTools(legacyMux("2025-06-18", "a"), func(w http.ResponseWriter, r *http.Request, m rpcRequest) {
				answerWith(401, "", "WWW-Authenticate", bearer)(w, r)
			}),
			status: data.NeedsKey, detail: "needs a key (OAuth)", seq: full2025,
			check: func(t *testing.T, res data.Result, _ Record) {
				if res.Protocol != "2025-06-18" || res.Transport != data.TransportStreamable {
					t.Errorf("learned %q %q, want the handshake's 2025-06-18 streamable-http", res.Protocol, res.Transport)
				}
			},
		},
		{
			name: "O_needs_key_403_with_challenge", handler: answerWith(403, "", "WWW-Authenticate", `Bearer error="insufficient_scope"`),
			status: data.NeedsKey, detail: "needs a key (token)", seq: discover,
		},
		{
			// n8n-mcp's static token: OAuth is not announced.
			name: "O_needs_key_401_bearer_realm_is_a_token", handler: answerWith(401, "", "WWW-Authenticate", `Bearer realm="n8n-mcp"`),
			status: data.NeedsKey, detail: "needs a key (token)", seq: discover,
		},
		{
			// A go-sdk server behind a proxy at its public name, its
			// DNS-rebinding protection on: every client gets 403.
			name: "O_failing_go_sdk_host_check", handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdkServer(nil, "a") }, nil),
			status: data.Failing, detail: hostCheckDetail, seq: discover,
			check: wantHTTPStatus(403),
		},
		{
			name:    "O_failing_typescript_sdk_host_check",
			handler: answerWith(403, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Invalid Host: mcp.test"},"id":null}`, "Content-Type", "application/json"),
			status:  data.Failing, detail: hostCheckDetail, seq: discover,
		},
		{
			name: "O_failing_playwright_host_check", handler: answerWith(403, "Access is only allowed at localhost:8931"),
			status: data.Failing, detail: hostCheckDetail, seq: discover,
		},
		{
			name: "O_refused_403_without_challenge", handler: answerWith(403, "forbidden"),
			status: data.Refused, detail: "refused: HTTP 403", seq: discover,
		},
		{
			name: "O_refused_bot_challenge_page",
			handler: answerWith(403, "<!DOCTYPE html><html><head><title>Just a moment...</title></head></html>",
				"Content-Type", "text/html", "Cf-Mitigated", "challenge"),
			status: data.Refused, detail: "refused: bot challenge page", seq: discover,
		},
		{
			name: "O_refused_429_retry_after", handler: answerWith(429, "slow down", "Retry-After", "120"),
			status: data.Refused, detail: "refused: HTTP 429", seq: discover,
			check: func(t *testing.T, res data.Result, rec Record) {
				if want := rec.Exchanges[0].Start.Add(120 * time.Second).UTC(); !res.RetryAfter.Equal(want) {
					t.Errorf("retry after %v, want %v", res.RetryAfter, want)
				}
			},
		},
		{
			name: "N8_three_redirects_followed", handler: redirects(3, http.StatusTemporaryRedirect, legacyMux("2025-06-18", "a")),
			status: data.Working, detail: "1 tool", seq: hops(4, full2025...),
		},
		{
			name: "N8_four_redirects_failing", handler: redirects(4, http.StatusTemporaryRedirect, legacyMux("2025-06-18", "a")),
			status: data.Failing, detail: "too many redirects", seq: hops(4, discover...),
		},
		{
			name: "N8_302_turning_POST_into_GET_not_followed", handler: redirects(1, http.StatusFound, legacyMux("2025-06-18", "a")),
			status: data.Failing, detail: "protocol error: redirect turns POST into GET", seq: discover,
		},
		{
			name: "N8_N7_redirect_to_http", handler: redirectTo("http://mcp.test:8443/mcp"),
			status: data.NotCheckable, detail: guardDetail, seq: discover,
		},
		{
			name: "N8_N7_redirect_to_port_8080", handler: redirectTo("https://mcp.test:8080/mcp"),
			status: data.NotCheckable, detail: guardDetail, seq: discover,
		},
		{
			name: "N8_N5_redirect_to_credentials", handler: redirectTo("https://user:pw@mcp.test:8443/mcp"),
			status: data.NotCheckable, detail: guardDetail, seq: discover,
		},
		{
			name: "N8_N6_redirect_to_private_address", handler: redirectTo("https://10.0.0.1:8443/mcp"),
			status: data.NotCheckable, detail: guardDetail, seq: discover,
		},
		{
			name: "N9_answer_1MiB_plus_1_plain", handler: bigAnswer(data.MaxAnswerBytes+1, false),
			status: data.Failing, detail: "answer over 1 MB", seq: discover,
			check: wantBytesRead(data.MaxAnswerBytes),
		},
		{
			name: "N9_answer_1MiB_plus_1_gzip", handler: bigAnswer(data.MaxAnswerBytes+1, true),
			status: data.Failing, detail: "answer over 1 MB", seq: discover,
			check: wantBytesRead(data.MaxAnswerBytes),
		},
		{
			name: "N9_answer_of_exactly_1MiB_is_read", handler: exactMiBDiscover(legacyMux("2025-06-18", "a")),
			status: data.Working, detail: "1 tool", seq: full2025,
		},
		{
			name: "N9_sse_stream_that_never_ends", handler: endlessSSE(),
			status: data.Failing, detail: "answer over 1 MB", seq: discover,
		},
		{
			name: "N10_sse_stream_that_stays_silent", handler: silentSSE(), timeout: n10,
			status: data.Failing, detail: noAnswer, seq: discover,
			check: wantGaveUpWithin(3 * time.Second),
		},
		{
			name: "N10_server_accepts_request_never_answers", handler: hang(), timeout: n10,
			status: data.Failing, detail: noAnswer, seq: discover,
			check: wantGaveUpWithin(3 * time.Second),
		},
		{
			name: "N10_tcp_accepted_never_answered", handler: legacyMux("2025-06-18"), timeout: n10,
			mod: func(t *testing.T, cfg *Config, _ *flowServer) {
				cfg.Lab.Resolve = map[string]string{"mcp.test:8443": silentListener(t).Addr().String()}
			},
			status: data.Failing, detail: noAnswer, seq: nil,
			check: wantGaveUpWithin(3 * time.Second),
		},
		{
			name:    "O_failing_html_200",
			handler: answerWith(200, "<!doctype html><html><body>Welcome</body></html>", "Content-Type", "text/html; charset=utf-8"),
			status:  data.Failing, detail: "not MCP: HTML page", seq: discoverInit,
		},
		{
			name: "O_failing_json_not_jsonrpc", handler: answerWith(200, `{"status":"ok"}`, "Content-Type", "application/json"),
			status: data.Failing, detail: "not MCP: JSON that is not JSON-RPC", seq: discoverInit,
		},
		{
			name: "O_failing_http_502", handler: answerWith(502, "bad gateway"),
			status: data.Failing, detail: "HTTP 502", seq: discoverInit, check: wantHTTPStatus(502),
		},
		{
			name: "O_failing_503_keeps_retry_after", handler: answerWith(503, "maintenance", "Retry-After", "30"),
			status: data.Failing, detail: "HTTP 503", seq: discoverInit,
			check: func(t *testing.T, res data.Result, rec Record) {
				if want := rec.Exchanges[len(rec.Exchanges)-1].Start.Add(30 * time.Second).UTC(); !res.RetryAfter.Equal(want) {
					t.Errorf("retry after %v, want %v", res.RetryAfter, want)
				}
			},
		},
		{
			name: "O_failing_404_everywhere_tries_legacy_sse", handler: http.NotFoundHandler(), opts: serverOpts{legacySSE: true},
			status: data.Failing, detail: "HTTP 404", seq: []string{"POST server/discover", "GET", "POST initialize"},
		},
		{
			name: "N4_modern_error_code_is_no_legacy_sse",
			handler: withInit(legacyMux("2025-06-18"), func(w http.ResponseWriter, _ *http.Request, m rpcRequest) {
				writeRPCErrorStatus(w, http.StatusBadRequest, m.ID, -32022, "unsupported protocol version")
			}),
			status: data.Failing, detail: "HTTP 400, error -32022", seq: discoverInit,
		},
		{
			name: "N4_discover_answered_with_text_retries_initialize_once",
			handler: func() rpcMux {
				m := legacyMux("2025-06-18", "a")
				m["server/discover"] = func(w http.ResponseWriter, r *http.Request, _ rpcRequest) {
					answerWith(200, "OK", "Content-Type", "text/plain")(w, r)
				}
				return m
			}(),
			status: data.Working, detail: "1 tool", seq: full2025,
		},
		{
			name: "N7_legacy_sse_endpoint_on_port_8080", opts: serverOpts{legacySSE: true}, url: "/sse",
			handler: newLegacySSEServer("/sse", "https://mcp.test:8080/messages", answerWith(405, ""), legacyMux("2024-11-05", "a")),
			status:  data.NotCheckable, detail: guardDetail,
			seq: []string{"POST server/discover", "GET"},
		},
		{
			// Discover's POST 404 without JSON-RPC sends the check to the
			// GET; refused that too, it asks initialize after all.
			name: "N4_discover_404_not_jsonrpc_no_stream_asks_initialize", opts: serverOpts{legacySSE: true},
			handler: func() rpcMux {
				m := legacyMux("2025-06-18", "a")
				m["server/discover"] = func(w http.ResponseWriter, r *http.Request, _ rpcRequest) {
					answerWith(404, "Not Found", "Content-Type", "text/plain")(w, r)
				}
				return m
			}(),
			status: data.Working, detail: "1 tool",
			seq: []string{"POST server/discover", "GET", "POST initialize", "POST notifications/initialized", "POST tools/list"},
		},
		{
			// A JSON-RPC error with 404 is a server that does not know the
			// method: the SDK's fallback to initialize goes out, no GET.
			name: "N4_discover_404_jsonrpc_error_asks_initialize", opts: serverOpts{legacySSE: true},
			handler: func() rpcMux {
				m := legacyMux("2025-06-18", "a")
				m["server/discover"] = func(w http.ResponseWriter, _ *http.Request, m rpcRequest) {
					writeRPCErrorStatus(w, http.StatusNotFound, m.ID, -32601, "Method not found")
				}
				return m
			}(),
			status: data.Working, detail: "1 tool", seq: full2025,
		},
		{
			name: "O_failing_tools_missing",
			handler: withTools(legacyMux("2025-06-18"), func(w http.ResponseWriter, _ *http.Request, m rpcRequest) {
				writeResult(w, m.ID, map[string]any{})
			}),
			status: data.Failing, detail: "protocol error: tools/list result has no tools array", seq: full2025,
		},
		{
			name: "O_failing_tools_null",
			handler: withTools(legacyMux("2025-06-18"), func(w http.ResponseWriter, _ *http.Request, m rpcRequest) {
				writeResult(w, m.ID, map[string]any{"tools": nil})
			}),
			status: data.Failing, detail: "protocol error: tools/list result has no tools array", seq: full2025,
		},
		{
			name: "O_failing_tools_without_names",
			handler: withTools(legacyMux("2025-06-18"), func(w http.ResponseWriter, _ *http.Request, m rpcRequest) {
				writeResult(w, m.ID, map[string]any{"tools": []any{map[string]any{}, map[string]any{"name": ""}}})
			}),
			status: data.Failing, detail: "protocol error: tools/list result has a tool without a name", seq: full2025,
			check: func(t *testing.T, res data.Result, _ Record) {
				if res.ToolCount != 0 || res.Tools != nil {
					t.Errorf("result keeps %d tools %q of an invalid list", res.ToolCount, res.Tools)
				}
			},
		},
		{
			name: "O_failing_tool_without_name_on_a_later_page",
			handler: withTools(legacyMux("2025-06-18"), func(w http.ResponseWriter, _ *http.Request, m rpcRequest) {
				var p struct {
					Cursor string `json:"cursor"`
				}
				json.Unmarshal(m.Params, &p)
				if p.Cursor == "" {
					writeResult(w, m.ID, map[string]any{"tools": toolList("a"), "nextCursor": "2"})
					return
				}
				writeResult(w, m.ID, map[string]any{"tools": []any{map[string]any{"inputSchema": map[string]any{"type": "object"}}}})
			}),
			status: data.Failing, detail: "protocol error: tools/list result has a tool without a name",
			seq: append(slices.Clone(full2025), "POST tools/list"),
		},
		{
			name: "O_failing_tools_list_error",
			handler: withTools(legacyMux("2025-06-18"), func(w http.ResponseWriter, _ *http.Request, m rpcRequest) {
				writeRPCError(w, m.ID, -32603, "internal error")
			}),
			status: data.Failing, detail: "protocol error: tools/list answered error -32603", seq: full2025,
		},
		{
			name:    "O_failing_unsupported_protocol_version",
			handler: legacyMux("1999-01-01", "a"),
			status:  data.Failing, detail: `protocol error: unsupported protocol version "1999-01-01"`, seq: discoverInit,
		},
		{
			name: "N3_server_requests_during_handshake_not_answered",
			// tools/list answers late, so the SDK's answers to the server's
			// requests (sent by goroutines of its own) meet the guard before
			// the check ends, also on a loaded machine.
			handler: answerLate(withInit(legacyMux("2025-06-18", "a"), func(w http.ResponseWriter, _ *http.Request, m rpcRequest) {
				writeSSE(w,
					[]byte(`{"jsonrpc":"2.0","id":"srv-1","method":"ping"}`),
					[]byte(`{"jsonrpc":"2.0","id":"srv-2","method":"roots/list"}`),
					[]byte(`{"jsonrpc":"2.0","id":"srv-3","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}`),
					rpcResponse(m.ID, initResult("2025-06-18"), nil))
			}), "tools/list", 300*time.Millisecond),
			status: data.Working, detail: "1 tool", seq: full2025,
			check: wantNotSent("response"),
		},
		{
			name: "N3_legacy_sse_server_requests_not_answered", opts: serverOpts{legacySSE: true}, url: "/sse",
			handler: newLegacySSEServer("/sse", "/messages/", answerWith(405, "Method Not Allowed"),
				// tools/list answers late, so the SDK's answer to the ping
				// (sent by a goroutine of its own) meets the guard before the
				// session ends, also on a loaded machine.
				answerLate(withInit(legacyMux("2024-11-05", "a"), func(w http.ResponseWriter, _ *http.Request, m rpcRequest) {
					w.Write([]byte(`{"jsonrpc":"2.0","id":"srv-1","method":"ping"}` + "\r\n\r\nevent: message\r\ndata: "))
					w.Write(rpcResponse(m.ID, initResult("2024-11-05"), nil))
				}), "tools/list", 300*time.Millisecond)),
			status: data.Working, detail: "1 tool",
			seq:   []string{"POST server/discover", "GET", "POST initialize", "POST notifications/initialized", "POST tools/list"},
			check: wantNotSent("response"),
		},
		{
			name: "N7_tls_certificate_for_another_name", handler: legacyMux("2025-06-18", "a"),
			opts:   serverOpts{certHost: "other.test"},
			status: data.Failing, detail: "TLS: certificate is for another name", seq: nil,
		},
		{
			name: "N7_tls_expired_certificate", handler: legacyMux("2025-06-18", "a"),
			opts:   serverOpts{certExpired: true},
			status: data.Failing, detail: "TLS: certificate has expired", seq: nil,
		},
		{
			name: "O_failing_connection_refused", handler: legacyMux("2025-06-18"),
			mod: func(t *testing.T, cfg *Config, _ *flowServer) {
				cfg.Lab.Resolve = map[string]string{"mcp.test:8443": unusedLoopback8443(t).Addr().String()}
			},
			status: data.Failing, detail: "connection refused", seq: nil,
		},
		{
			name: "O_failing_unknown_name", handler: legacyMux("2025-06-18"), url: "https://nowhere.test:8443/mcp",
			status: data.Failing, detail: reasonDNSNoAddress, seq: nil,
		},
		{
			name: "N6_name_resolving_to_a_private_address", handler: legacyMux("2025-06-18"), url: "https://private.test/mcp",
			mod: func(_ *testing.T, cfg *Config, _ *flowServer) {
				cfg.Resolver = func(context.Context, string) ([]netip.Addr, error) {
					return []netip.Addr{netip.MustParseAddr("10.1.2.3")}, nil
				}
				cfg.DialContext = func(context.Context, string, string) (net.Conn, error) {
					return nil, fmt.Errorf("test: nothing may be dialled")
				}
			},
			status: data.NotCheckable, detail: "resolves to no public IPv4 address", seq: nil,
		},
		{
			name: "N5_credential_in_user_info", handler: legacyMux("2025-06-18"), url: "https://user:pw@mcp.test:8443/mcp",
			status: data.NotCheckable, detail: "address carries a credential", seq: nil, check: wantNoExchange,
		},
		{
			name: "N5_credential_in_query", handler: legacyMux("2025-06-18"), url: "https://mcp.test:8443/mcp?api_key=secret",
			status: data.NotCheckable, detail: "address carries a credential", seq: nil, check: wantNoExchange,
		},
		{
			name: "N7_not_https", handler: legacyMux("2025-06-18"), url: "http://mcp.test:8443/mcp",
			status: data.NotCheckable, detail: "not https", seq: nil, check: wantNoExchange,
		},
		{
			name: "N7_port_8080", handler: legacyMux("2025-06-18"), url: "https://mcp.test:8080/mcp",
			status: data.NotCheckable, detail: "port not 443 or 8443", seq: nil, check: wantNoExchange,
		},
		{
			name: "O_not_checkable_no_address", handler: legacyMux("2025-06-18"), url: "-",
			status: data.NotCheckable, detail: "no address", seq: nil, check: wantNoExchange,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runCheckCase(t, tc)
		})
	}
}

// runCheckCase starts the case's server, checks it and asserts the outcome,
// the reason, the sequence the server received, and the case's own checks.
func runCheckCase(t *testing.T, tc checkCase) {
	t.Helper()
	srv := startFlowServer(t, tc.handler, tc.opts)
	tg := srv.target()
	switch {
	case tc.url == "-":
		tg.URL = ""
	case strings.HasPrefix(tc.url, "/"):
		tg.URL = srv.URL + tc.url
	case tc.url != "":
		tg.URL = tc.url
	}
	c := newTestChecker(t, srv.Lab, tc.timeout, func(cfg *Config) {
		if tc.mod != nil {
			tc.mod(t, cfg, srv)
		}
	})
	res, rec := c.Check(context.Background(), tg)
	if tc.detail == guardDetail {
		// The reason is the guard's own words for the refused hop.
		ex, _ := failedExchange(rec, false)
		tc.detail = ex.Detail
		if ex.Detail == "" {
			t.Errorf("the guard gave no detail for the refused redirect")
		}
	}
	if res.Status != tc.status || res.Detail != tc.detail {
		t.Errorf("concluded %s %q, want %s %q; transcript:\n%s", res.Status, res.Detail, tc.status, tc.detail, transcriptText(rec))
	}
	t.Logf("%s %q: %d requests, %d conns, %d bytes; transcript:\n%s", res.Status, res.Detail, res.Requests, res.Conns, res.BytesRead, transcriptText(rec))
	srv.rec.wantSequence(t, tc.seq...)
	wantFullResult(t, res)
	if tc.check != nil {
		tc.check(t, res, rec)
	}
}

// wantFullResult asserts the fields every result carries, and that the
// check left who, why and when to its caller (data.Result.Stamp, the one
// place that sets them).
func wantFullResult(t *testing.T, res data.Result) {
	t.Helper()
	if !res.Status.Valid() || res.Detail == "" {
		t.Errorf("result %q %q", res.Status, res.Detail)
	}
	if res.ID != "" || res.URL != "" || res.Host != "" || res.Reason != "" || res.ProberVersion != "" ||
		!res.Planned.IsZero() || !res.Started.IsZero() || !res.Finished.IsZero() || res.Lateness != 0 || res.Duration != 0 {
		t.Errorf("the check set its caller's fields: %q %q %q %q %q, times %v %v %v %v %v", res.ID, res.URL, res.Host, res.Reason, res.ProberVersion,
			res.Planned, res.Started, res.Finished, res.Lateness, res.Duration)
	}
}

// --- assertions ---

// wantKeyInfo wants the result to say where the server says to get a key
// (the resource_metadata its challenge announced), "" for none.
func wantKeyInfo(link string) func(*testing.T, data.Result, Record) {
	return func(t *testing.T, res data.Result, _ Record) {
		if res.KeyInfo != link {
			t.Errorf("key info %q, want %q", res.KeyInfo, link)
		}
	}
}

func wantHTTPStatus(code int) func(*testing.T, data.Result, Record) {
	return func(t *testing.T, res data.Result, _ Record) {
		if res.HTTPStatus != code {
			t.Errorf("http status %d, want %d", res.HTTPStatus, code)
		}
	}
}

func wantBytesRead(n int64) func(*testing.T, data.Result, Record) {
	return func(t *testing.T, res data.Result, _ Record) {
		if res.BytesRead != n {
			t.Errorf("bytes read %d, want %d", res.BytesRead, n)
		}
	}
}

func wantGaveUpWithin(d time.Duration) func(*testing.T, data.Result, Record) {
	return func(t *testing.T, res data.Result, _ Record) {
		if res.Duration > d {
			t.Errorf("check took %v, want it to give up within %v", res.Duration, d)
		}
	}
}

// wantNotSent asserts the guard kept a message of rpcMethod from leaving
// (the recorder proves the server never got it).
// answerLate returns mux with method's answer held for d.
func answerLate(mux rpcMux, method string, d time.Duration) rpcMux {
	h := mux[method]
	mux[method] = func(w http.ResponseWriter, r *http.Request, m rpcRequest) {
		time.Sleep(d)
		h(w, r, m)
	}
	return mux
}

func wantNotSent(rpcMethod string) func(*testing.T, data.Result, Record) {
	return func(t *testing.T, _ data.Result, rec Record) {
		for _, ex := range rec.Exchanges {
			if ex.RPCMethod == rpcMethod && ex.Blocked != "" {
				return
			}
		}
		t.Errorf("no %s refused by the guard; transcript:\n%s", rpcMethod, transcriptText(rec))
	}
}

func wantNoExchange(t *testing.T, res data.Result, rec Record) {
	if len(rec.Exchanges) != 0 || res.Requests != 0 || res.Conns != 0 {
		t.Errorf("%d exchanges, %d requests, %d conns: want nothing attempted", len(rec.Exchanges), res.Requests, res.Conns)
	}
}

// --- hostile servers ---

// hops repeats each request of seq n times: a request followed through n-1
// redirects arrives n times.
func hops(n int, seq ...string) []string {
	var out []string
	for _, s := range seq {
		for range n {
			out = append(out, s)
		}
	}
	return out
}

// redirects answers /mcp, /r1, ... with n redirects of code before next
// serves at /final.
func redirects(n, code int, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hop := 0
		if r.URL.Path != "/mcp" {
			if r.URL.Path == "/final" {
				next.ServeHTTP(w, r)
				return
			}
			fmt.Sscanf(r.URL.Path, "/r%d", &hop)
		}
		to := fmt.Sprintf("/r%d", hop+1)
		if hop+1 == n {
			to = "/final"
		}
		io.Copy(io.Discard, r.Body)
		http.Redirect(w, r, to, code)
	})
}

// redirectTo answers everything with a 307 to location.
func redirectTo(location string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", location)
		w.WriteHeader(http.StatusTemporaryRedirect)
	}
}

// bigAnswer answers with n bytes of a JSON-RPC-looking body, gzipped or not.
func bigAnswer(n int, gz bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		body := bytes.Repeat([]byte("x"), n)
		copy(body, `{"jsonrpc":"2.0","id":1,"result":{"pad":"`)
		w.Header().Set("Content-Type", "application/json")
		if gz {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			zw.Write(body)
			zw.Close()
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(b.Bytes())
			return
		}
		w.Write(body)
	}
}

// exactMiBDiscover answers server/discover with a method-not-found error
// padded to exactly data.MaxAnswerBytes; the rest goes to next.
func exactMiBDiscover(next rpcMux) rpcMux {
	next["server/discover"] = func(w http.ResponseWriter, _ *http.Request, m rpcRequest) {
		head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"`, m.ID)
		tail := `"}}`
		pad := strings.Repeat("p", data.MaxAnswerBytes-len(head)-len(tail))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, head+pad+tail)
	}
	return next
}

// endlessSSE answers with an event stream of keep-alive events that never
// ends and never answers.
func endlessSSE() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		chunk := []byte(strings.Repeat("event: ping\ndata: {}\n\n", 200))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}
}

// silentSSE opens an event stream and says nothing until the client leaves.
func silentSSE() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

// silentListener accepts TCP connections on a loopback :8443 and never
// says a word (not even TLS).
func silentListener(t *testing.T) netip.AddrPort {
	ln := testutil.ListenLoopback8443(t)
	go holdConns(t, ln)
	return netip.MustParseAddrPort(ln.Addr().String())
}

// hang reads the request and never answers.
func hang() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}
}
