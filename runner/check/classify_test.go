package check

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"plug.directory/prober/data"
)

// TestClassify proves the table O decisions as a pure function of a record
// and the flows' findings, for cases a live server cannot stage cheaply.
func TestClassify(t *testing.T) {
	t.Parallel()
	answer := func(status int, ctype, body string, hdr ...string) Exchange {
		h := http.Header{}
		if ctype != "" {
			h.Set("Content-Type", ctype)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			h.Set(hdr[i], hdr[i+1])
		}
		return Exchange{Method: "POST", RPCMethod: "initialize", Status: status, Header: h, BodyHead: []byte(body), Bytes: int64(len(body))}
	}
	rec := func(exs ...Exchange) Record {
		r := Record{Exchanges: exs}
		for _, ex := range exs {
			if refusalStatus(ex.Status) && r.Refusal == 0 {
				r.Refusal = ex.Status
			}
		}
		return r
	}
	cc := classifyContext{timeout: data.CheckTimeout}
	tests := []struct {
		name   string
		rec    Record
		fd     findings
		cc     classifyContext
		status data.Outcome
		detail string
	}{
		{"O_working_wins_over_a_late_refusal", rec(answer(429, "", "")), findings{ToolsOK: true, Tools: []string{"a", "b", "c"}}, cc, data.Working, "3 tools"},
		{"O_working_tool_list_cut_short", Record{}, findings{ToolsOK: true, Tools: []string{"a"}, ToolsNote: "server repeated a cursor"}, cc, data.Working, "1 tool (server repeated a cursor)"},
		{"O_needs_key_resource_metadata_without_bearer", rec(answer(401, "", "", "WWW-Authenticate", `Custom resource_metadata="https://x/.well-known/oauth-protected-resource"`)), findings{}, cc, data.NeedsKey, "needs a key (OAuth)"},
		{"O_needs_key_odd_scheme_not_echoed", rec(answer(401, "", "", "WWW-Authenticate", `<script>alert(1)</script>`)), findings{}, cc, data.NeedsKey, "needs a key: HTTP 401"},
		// Bot challenges by what the edges really send.
		{"O_refused_cloudflare_cf_mitigated", rec(answer(403, "text/html", "<html>", "Cf-Mitigated", "challenge")), findings{}, cc, data.Refused, "refused: bot challenge page"},
		{"O_refused_cloudflare_challenge_script_503", rec(answer(503, "text/html", "<!DOCTYPE html><html><head><title>Just a moment...</title><script>(function(){window._cf_chl_opt={cvId:'3'}})();</script>")), findings{}, cc, data.Refused, "refused: bot challenge page"},
		{"O_refused_aws_waf_challenge_202", rec(answer(202, "text/html", "<html>", "X-Amzn-Waf-Action", "challenge")), findings{}, cc, data.Refused, "refused: bot challenge page"},
		{"O_refused_aws_waf_captcha_405", rec(answer(405, "text/html", "<html>", "X-Amzn-Waf-Action", "captcha")), findings{}, cc, data.Refused, "refused: bot challenge page"},
		{"O_refused_vercel_challenge_429", rec(answer(429, "text/html", "<html>", "X-Vercel-Mitigated", "challenge")), findings{}, cc, data.Refused, "refused: bot challenge page"},
		{"O_refused_akamai_sec_cpt_428", rec(answer(428, "application/json", `{"sec-cp-challenge": "true","provider":"crypto","branding_url_content":"/_sec/cp_challenge/crypto_message-4-3.htm"}`)), findings{}, cc, data.Refused, "refused: bot challenge page"},
		{"O_refused_imperva_block_page", rec(answer(403, "text/html", `<html><body>Request unsuccessful. Incapsula incident ID: 123-456</body></html>`)), findings{}, cc, data.Refused, "refused: bot challenge page"},
		{"O_refused_datadome_captcha_page", rec(answer(403, "text/html", `<html><script src="https://ct.captcha-delivery.com/c.js"></script></html>`, "X-Datadome", "protected")), findings{}, cc, data.Refused, "refused: bot challenge page"},
		{"O_refused_datadome_json_block", rec(answer(403, "application/json", `{"url":"https://geo.example/captcha"}`, "X-Dd-B", "1")), findings{}, cc, data.Refused, "refused: bot challenge page"},
		// ... and nothing looser: the word captcha, a title, a script the
		// edge injects into ordinary pages.
		{"O_failing_landing_page_with_recaptcha", rec(answer(200, "text/html", `<!DOCTYPE html><html><head><script src="https://www.google.com/recaptcha/api.js"></script></head><body><div class="g-recaptcha">captcha</div></body></html>`)), findings{}, cc, data.Failing, "not MCP: HTML page"},
		{"O_failing_cloudflare_detection_script_on_ordinary_page", rec(answer(200, "text/html", `<html><title>Just a moment...</title><script src="/cdn-cgi/challenge-platform/scripts/jsd/main.js"></script></html>`)), findings{}, cc, data.Failing, "not MCP: HTML page"},
		{"O_failing_404_page_mentioning_captcha", rec(answer(404, "text/html", `<html><title>Security checkpoint</title>Solve the captcha</html>`)), findings{}, cc, data.Failing, "HTTP 404"},
		{"O_refused_403_without_challenge", rec(answer(403, "text/plain", "Forbidden")), findings{}, cc, data.Refused, "refused: HTTP 403"},
		{"O_refused_403_with_captcha_word_is_plain_403", rec(answer(403, "text/html", `<html>captcha required</html>`)), findings{}, cc, data.Refused, "refused: HTTP 403"},
		{"O_failing_marker_on_a_200_is_not_a_challenge", rec(answer(200, "text/html", `<html>Incapsula incident ID</html>`)), findings{}, cc, data.Failing, "not MCP: HTML page"},
		{"O_refused_429_first_refusal_counts", rec(answer(429, "", ""), answer(401, "", "")), findings{}, cc, data.Refused, "refused: HTTP 429"},
		{"O_failing_deadline_without_exchange", Record{}, findings{}, classifyContext{deadline: true, timeout: 45 * time.Second}, data.Failing, "no answer in 45 s"},
		{"O_not_checkable_cancelled_by_prober", rec(answer(200, "application/json", `{"jsonrpc":"2.0","id":1,"result":{}}`)), findings{}, classifyContext{cancelled: true}, data.NotCheckable, "check cancelled by the prober"},
		{"O_failing_json_array", rec(answer(200, "application/json", `[1,2]`)), findings{}, cc, data.Failing, "not MCP: JSON that is not JSON-RPC"},
		{"O_failing_not_json", rec(answer(200, "application/json", `{"jsonrpc":`)), findings{}, cc, data.Failing, "not MCP: not JSON"},
		{"O_failing_plain_text", rec(answer(200, "text/plain", `hello`)), findings{}, cc, data.Failing, "not MCP: content type text/plain"},
		{"O_failing_html_without_type", rec(answer(200, "", `<!DOCTYPE html><html></html>`)), findings{}, cc, data.Failing, "not MCP: HTML page"},
		{"O_failing_empty_200", rec(answer(200, "application/json", ``)), findings{Handshake: false}, cc, data.Failing, "not MCP: empty answer"},
		{"O_failing_sse_get_without_endpoint", rec(Exchange{Method: "GET", Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, BodyHead: []byte("event: message\ndata: {}\n\n"), Bytes: 24}), findings{}, cc, data.Failing, "not MCP: no endpoint event"},
		{"O_failing_rpc_error_at_initialize", rec(answer(200, "application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}`)), findings{RPCErr: &jsonrpc.Error{Code: -32602}, RPCMethod: "initialize"}, cc, data.Failing, "protocol error: initialize answered error -32602"},
		{"O_failing_dns_other", rec(Exchange{Method: "POST", ErrKind: ErrDNS, Detail: "DNS: lookup failed"}), findings{}, cc, data.Failing, "DNS: lookup failed"},
		{"O_failing_connection_reset", rec(Exchange{Method: "POST", ErrKind: ErrNetwork}), findings{}, cc, data.Failing, "connection failed: closed by the server"},
		{"O_blocked_messages_are_not_failures", rec(answer(200, "application/json", `{"jsonrpc":"2.0","id":1,"result":{}}`), Exchange{Method: "DELETE", Blocked: "N2: method DELETE", ErrKind: ErrBlocked}), findings{Handshake: true}, cc, data.Failing, "protocol error: no valid tools/list result"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := classify(tc.rec, tc.fd, tc.cc)
			if v.status != tc.status || v.detail != tc.detail {
				t.Errorf("classify = %s %q, want %s %q", v.status, v.detail, tc.status, tc.detail)
			}
		})
	}
}

// TestRetryAfter proves both forms of Retry-After (429 and 503 feed
// data.State.RetryAfter).
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	now := func() time.Time { return start }
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"120", start.Add(2 * time.Minute), true},
		{"Wed, 02 Dec 2026 11:00:00 GMT", start.Add(time.Hour), true},
		{"soon", time.Time{}, false},
		{"-5", time.Time{}, false},
		{"", time.Time{}, false},
	} {
		got, ok := retryAfter(tc.in, start, now)
		if ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("retryAfter(%q) = %v %v, want %v %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestLegacySSEFallbackRule proves the backwards-compatibility rule of N4:
// only 400, 404 or 405 to initialize, without a modern error code, and no
// refusal, sends the check to the legacy transport.
func TestLegacySSEFallbackRule(t *testing.T) {
	t.Parallel()
	init := func(status int, body string) Exchange {
		return Exchange{Method: "POST", RPCMethod: "initialize", Status: status, BodyHead: []byte(body)}
	}
	for _, tc := range []struct {
		name string
		rec  Record
		want bool
	}{
		{"N4_405", Record{Exchanges: []Exchange{init(405, "")}}, true},
		{"N4_404_html", Record{Exchanges: []Exchange{init(404, "<html>Cannot POST /sse</html>")}}, true},
		{"N4_400_plain_jsonrpc_error", Record{Exchanges: []Exchange{init(400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"x"}}`)}}, true},
		{"N4_400_header_mismatch", Record{Exchanges: []Exchange{init(400, `{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"x"}}`)}}, false},
		{"N4_400_missing_capabilities", Record{Exchanges: []Exchange{init(400, `{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"x"}}`)}}, false},
		{"N4_400_unsupported_version", Record{Exchanges: []Exchange{init(400, `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"x"}}`)}}, false},
		{"N4_500", Record{Exchanges: []Exchange{init(500, "")}}, false},
		{"N4_after_refusal", Record{Exchanges: []Exchange{init(405, "")}, Refusal: 401}, false},
		{"N4_initialize_never_sent", Record{}, false},
	} {
		if got := wantsLegacySSE(tc.rec); got != tc.want {
			t.Errorf("%s: wantsLegacySSE = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestTakesNoPosts proves when server/discover's answer sends a check
// straight to the legacy GET (rule N4): 404 or 405
// without JSON-RPC, nothing refused, no initialize asked since.
func TestTakesNoPosts(t *testing.T) {
	t.Parallel()
	discover := func(status int, body string) Exchange {
		return Exchange{Method: "POST", RPCMethod: "server/discover", Status: status, BodyHead: []byte(body), Bytes: int64(len(body))}
	}
	for _, tc := range []struct {
		name string
		rec  Record
		want bool
	}{
		{"N4_405_empty", Record{Exchanges: []Exchange{discover(405, "")}}, true},
		{"N4_405_text", Record{Exchanges: []Exchange{discover(405, "Method Not Allowed")}}, true},
		{"N4_404_html", Record{Exchanges: []Exchange{discover(404, "<html>Cannot POST /sse</html>")}}, true},
		{"N4_404_json_not_rpc", Record{Exchanges: []Exchange{discover(404, `{"detail":"Not Found"}`)}}, true},
		{"N4_404_jsonrpc_error", Record{Exchanges: []Exchange{discover(404, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}`)}}, false},
		{"N4_400_text", Record{Exchanges: []Exchange{discover(400, "bad request")}}, false},
		{"N4_200_jsonrpc_error", Record{Exchanges: []Exchange{discover(200, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}`)}}, false},
		{"N4_after_refusal", Record{Exchanges: []Exchange{discover(405, "")}, Refusal: 429}, false},
		{"N4_initialize_asked_since", Record{Exchanges: []Exchange{discover(405, ""), {Method: "POST", RPCMethod: "initialize", Status: 405}}}, false},
		{"N4_discover_never_sent", Record{}, false},
	} {
		if got := takesNoPosts(tc.rec); got != tc.want {
			t.Errorf("%s: takesNoPosts = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// ExampleChecker_Check shows a check of an address the rules forbid: it
// concludes at once, without sending anything.
func ExampleChecker_Check() {
	c, err := New(Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, rec := c.Check(context.Background(), Target{ID: "example", URL: "http://mcp.example.com/mcp"})
	fmt.Println(res.Status, "-", res.Detail, "-", len(rec.Exchanges), "requests")
	// Output: not_checkable - not https - 0 requests
}

// FuzzClassify proves classify concludes one of the five check outcomes of
// table O with a non-empty reason for any record, whatever a server
// answered.
func FuzzClassify(f *testing.F) {
	f.Add(200, "application/json", []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`), uint8(0), false, "")
	f.Add(401, "", []byte(""), uint8(0), false, "Bearer resource_metadata=x")
	f.Add(0, "", []byte(nil), uint8(ErrTimeout), true, "")
	f.Add(302, "text/html", []byte("<html>"), uint8(ErrRedirectMethodChange), false, "")
	f.Fuzz(func(t *testing.T, status int, ctype string, body []byte, kind uint8, deadline bool, challenge string) {
		h := http.Header{}
		h.Set("Content-Type", ctype)
		h.Set("WWW-Authenticate", challenge)
		ex := Exchange{Method: "POST", RPCMethod: "initialize", Status: status, Header: h, BodyHead: body, Bytes: int64(len(body)), ErrKind: ErrKind(kind % 20)}
		rec := Record{Exchanges: []Exchange{ex}}
		if refusalStatus(status) {
			rec.Refusal = status
		}
		v := classify(rec, findings{}, classifyContext{deadline: deadline, timeout: data.CheckTimeout})
		switch v.status {
		case data.Working, data.NeedsKey, data.Refused, data.NotCheckable, data.Failing:
		default:
			t.Fatalf("outcome %q is not one a check concludes", v.status)
		}
		if v.detail == "" {
			t.Fatalf("no reason for %s", v.status)
		}
	})
}

// TestAuthParam reads an auth-param of a challenge as RFC 9110 writes it:
// a token or a quoted string, any case of its name, never the end of
// another name (where a server says to get a key).
func TestAuthParam(t *testing.T) {
	for _, c := range []struct{ challenge, want string }{
		{`Bearer resource_metadata="https://a.test/.well-known/oauth-protected-resource"`, "https://a.test/.well-known/oauth-protected-resource"},
		{`Bearer realm="mcp", Resource_Metadata = "https://a.test/m", scope="x"`, "https://a.test/m"},
		{`Bearer resource_metadata=https://a.test/m, realm=x`, "https://a.test/m"},
		{`Bearer resource_metadata="https://a.test/\"q\""`, `https://a.test/"q"`},
		{`Bearer x_resource_metadata="https://evil.test/"`, ""},
		{`Bearer resource_metadata`, ""},
		{`Bearer resource_metadata="https://a.test/unterminated`, ""},
		{`Bearer realm="a, resource_metadata=https://evil.test/"`, ""},
		{`Bearer realm="a \" resource_metadata=https://evil.test/", resource_metadata="https://a.test/m"`, "https://a.test/m"},
		{``, ""},
	} {
		if got := authParam(c.challenge, "resource_metadata"); got != c.want {
			t.Errorf("authParam(%q) = %q, want %q", c.challenge, got, c.want)
		}
	}
}
