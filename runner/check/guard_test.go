package check

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/testutil"
)

// seenRequest is one request as a test server received it.
type seenRequest struct {
	Method      string
	Path        string
	Header      http.Header
	Body        string
	Remote      string
	Host        string
	ClientCerts int
}

// recorder records every request a test server receives, then answers
// with next (or 200 {} when next is nil).
type recorder struct {
	mu   sync.Mutex
	reqs []seenRequest
	next http.Handler
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s := seenRequest{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: string(b), Remote: r.RemoteAddr, Host: r.Host}
	if r.TLS != nil {
		s.ClientCerts = len(r.TLS.PeerCertificates)
	}
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, s)
	rc.mu.Unlock()
	if rc.next != nil {
		rc.next.ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
}

func (rc *recorder) hosts() []string {
	var hs []string
	for _, s := range rc.seen() {
		hs = append(hs, s.Host)
	}
	return hs
}

func (rc *recorder) seen() []seenRequest {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]seenRequest(nil), rc.reqs...)
}

// guardedServer starts a recording lab server and a guard that reaches it
// (and nothing else).
func guardedServer(t *testing.T, next http.Handler, mod func(*GuardConfig)) (*labServer, *recorder, *Guard) {
	t.Helper()
	rc := &recorder{next: next}
	srv := startLabServer(t, rc, labServerConfig{})
	cfg := GuardConfig{Lab: srv.Lab, DialContext: onlyDial(t, srv)}
	if mod != nil {
		mod(&cfg)
	}
	return srv, rc, newTestGuard(t, cfg)
}

// do sends one request through the guard's client and reads the answer.
func do(t *testing.T, g *Guard, method, u, body string, header http.Header) (int, error) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, u, r)
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := g.Client().Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`

// TestGuard proves the request rules N1, N2, N3, N5 and the refusal rule
// at the RoundTripper, against real TLS servers that record what arrives.
func TestGuard(t *testing.T) {
	t.Parallel()
	t.Run("N1_exact_user_agent_on_every_request", func(t *testing.T) {
		srv, rc, g := guardedServer(t, nil, nil)
		hdr := http.Header{"User-Agent": {"Go-http-client/1.1"}}
		for _, r := range []struct{ method, body string }{
			{http.MethodPost, initializeBody},
			{http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
			{http.MethodGet, ""},
			{http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
		} {
			if _, err := do(t, g, r.method, srv.URL+"/mcp", r.body, hdr); err != nil {
				t.Fatalf("%s: %v", r.method, err)
			}
		}
		seen := rc.seen()
		if len(seen) != 4 {
			t.Fatalf("server saw %d requests, want 4", len(seen))
		}
		want := data.UserAgent()
		for _, s := range seen {
			if got := s.Header.Values("User-Agent"); len(got) != 1 || got[0] != want {
				t.Errorf("%s User-Agent = %q, want exactly %q", s.Method, got, want)
			}
		}
	})
	t.Run("N1_configured_user_agent", func(t *testing.T) {
		const ua = "plug.directory-prober/v9.9.9 (+https://plug.directory/probe)"
		srv, rc, g := guardedServer(t, nil, func(c *GuardConfig) { c.UserAgent = ua })
		if _, err := do(t, g, http.MethodPost, srv.URL, initializeBody, nil); err != nil {
			t.Fatal(err)
		}
		if got := rc.seen()[0].Header.Get("User-Agent"); got != ua {
			t.Errorf("User-Agent = %q, want %q", got, ua)
		}
	})

	for _, m := range []string{http.MethodDelete, http.MethodPut, http.MethodPatch, http.MethodHead, http.MethodOptions, "PROPFIND"} {
		t.Run("N2_no_"+m, func(t *testing.T) {
			srv, rc, g := guardedServer(t, nil, nil)
			_, err := do(t, g, m, srv.URL+"/mcp", "", http.Header{"Mcp-Session-Id": {"abc"}})
			var gerr *GuardError
			if !errors.As(err, &gerr) || gerr.Rule != "N2" {
				t.Fatalf("%s: err = %v, want a N2 GuardError", m, err)
			}
			assertNothingSent(t, g, rc, ErrBlocked, "N2: method "+m)
		})
	}
	t.Run("N2_GET_with_body", func(t *testing.T) {
		srv, rc, g := guardedServer(t, nil, nil)
		if _, err := do(t, g, http.MethodGet, srv.URL, initializeBody, nil); err == nil {
			t.Fatal("GET with a body: no error")
		}
		assertNothingSent(t, g, rc, ErrBlocked, "N2: GET with a body")
	})

	forbidden := []struct {
		name, body, blocked, rpc string
	}{
		{"N3_no_notifications_cancelled", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"ctx"}}`,
			"N3: notifications/cancelled", "notifications/cancelled"},
		{"N3_no_ping", `{"jsonrpc":"2.0","id":7,"method":"ping"}`, "N3: ping", "ping"},
		{"N3_no_answer_to_server_request", `{"jsonrpc":"2.0","id":3,"result":{}}`, "N3: response to a server request", "response"},
		{"N3_no_error_answer_to_server_request", `{"jsonrpc":"2.0","id":"s-1","error":{"code":-32601,"message":"no"}}`,
			"N3: response to a server request", "response"},
		{"N3_no_roots_list_answer", `{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}`, "N3: response to a server request", "response"},
		{"N3_no_tools_call", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`, "N3: tools/call", "tools/call"},
		{"N3_no_resources_list", `{"jsonrpc":"2.0","id":2,"method":"resources/list"}`, "N3: resources/list", "resources/list"},
		{"N3_no_resources_read", `{"jsonrpc":"2.0","id":2,"method":"resources/read"}`, "N3: resources/read", "resources/read"},
		{"N3_no_prompts_get", `{"jsonrpc":"2.0","id":2,"method":"prompts/get"}`, "N3: prompts/get", "prompts/get"},
		{"N3_no_subscriptions", `{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen"}`, "N3: subscriptions/listen", "subscriptions/listen"},
		{"N3_no_notifications_roots_changed", `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`,
			"N3: notifications/roots/list_changed", "notifications/roots/list_changed"},
		{"N3_no_batch_with_tools_call", `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"tools/call"}]`,
			"N3: batch with tools/call", "batch"},
		{"N3_no_batch_with_response", `[{"jsonrpc":"2.0","id":9,"result":{}}]`, "N3: batch with response to a server request", "batch"},
		{"N3_no_batch_at_all", `[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`, "N3: batch of tools/list", "batch"},
		{"N3_no_request_without_id", `{"jsonrpc":"2.0","method":"tools/list"}`, "N3: tools/list without an id", "tools/list"},
		{"N3_no_notification_with_id", `{"jsonrpc":"2.0","id":4,"method":"notifications/initialized"}`,
			"N3: notifications/initialized with an id", "notifications/initialized"},
		{"N3_no_malformed_input", `{"jsonrpc":"2.0","method":`, "N3: not a JSON-RPC message", ""},
		{"N3_no_empty_post", "", "N3: not a JSON-RPC message", ""},
		{"N3_no_method_no_result", `{"jsonrpc":"2.0","id":1}`, "N3: not a JSON-RPC message", ""},
		{"N3_no_error_answer_null_id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`,
			"N3: response to a server request", "response"},
		// A server's parser must never see another method than the guard did.
		{"N3_no_duplicate_method", `{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/list"}`, "N3: not a JSON-RPC message", ""},
		{"N3_no_case_variant_method", `{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call"}`, "N3: not a JSON-RPC message", ""},
		{"N3_no_second_message_after", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}{"jsonrpc":"2.0","id":2,"method":"tools/call"}`,
			"N3: not a JSON-RPC message", ""},
		{"N3_no_unknown_member", `{"jsonrpc":"2.0","id":1,"method":"tools/list","call":"x"}`, "N3: not a JSON-RPC message", ""},
		{"N3_no_missing_version", `{"id":1,"method":"tools/list"}`, "N3: not a JSON-RPC message", ""},
		{"N3_no_wrong_version", `{"jsonrpc":"1.0","id":1,"method":"tools/list"}`, "N3: not a JSON-RPC message", ""},
		{"N3_no_method_not_string", `{"jsonrpc":"2.0","id":1,"method":["tools/list"]}`, "N3: not a JSON-RPC message", ""},
		{"N3_no_object_id", `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`, "N3: not a JSON-RPC message", ""},
		{"N3_no_null_id_request", `{"jsonrpc":"2.0","id":null,"method":"tools/list"}`, "N3: not a JSON-RPC message", ""},
		{"N3_no_request_with_result", `{"jsonrpc":"2.0","id":1,"method":"tools/list","result":{}}`, "N3: not a JSON-RPC message", "tools/list"},
		{"N3_no_empty_method", `{"jsonrpc":"2.0","method":""}`, "N3: empty method", ""},
		{"N3_no_json_string", `"tools/list"`, "N3: not a JSON-RPC message", ""},
	}
	for _, c := range forbidden {
		t.Run(c.name, func(t *testing.T) {
			srv, rc, g := guardedServer(t, nil, nil)
			if _, err := do(t, g, http.MethodPost, srv.URL+"/mcp", c.body, nil); err == nil {
				t.Fatal("forbidden message: no error")
			}
			ex := assertNothingSent(t, g, rc, ErrBlocked, c.blocked)
			if ex.RPCMethod != c.rpc {
				t.Errorf("RPCMethod = %q, want %q", ex.RPCMethod, c.rpc)
			}
		})
	}
	headers := []struct {
		name, method, body string
		header             http.Header
		blocked            string // "" means sent
	}{
		{"N3_mcp_method_header_matching_sent", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			http.Header{"Mcp-Method": {"tools/list"}, "Mcp-Protocol-Version": {"2026-07-28"}}, ""},
		{"N3_no_mcp_method_header_mismatch", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			http.Header{"Mcp-Method": {"tools/call"}}, "N3: Mcp-Method header tools/call does not match the message"},
		{"N3_no_mcp_method_header_twice", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			http.Header{"Mcp-Method": {"tools/list", "tools/call"}}, "N3: Mcp-Method header tools/list,tools/call does not match the message"},
		{"N3_no_mcp_method_header_on_GET", http.MethodGet, "",
			http.Header{"Mcp-Method": {"tools/call"}}, "N3: Mcp-Method header tools/call does not match the message"},
		{"N3_no_mcp_name_header", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			http.Header{"Mcp-Name": {"delete_everything"}}, "N3: Mcp-Name header"},
		{"N3_no_mcp_param_header", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			http.Header{"Mcp-Param-Path": {"/"}}, "N3: Mcp-Param-Path header"},
	}
	for _, c := range headers {
		t.Run(c.name, func(t *testing.T) {
			srv, rc, g := guardedServer(t, nil, nil)
			_, err := do(t, g, c.method, srv.URL+"/mcp", c.body, c.header)
			if c.blocked == "" {
				if err != nil || len(rc.seen()) != 1 {
					t.Fatalf("err %v, server saw %d; want sent", err, len(rc.seen()))
				}
				if got := rc.seen()[0].Header.Get("Mcp-Method"); got != "tools/list" {
					t.Errorf("Mcp-Method = %q, want it sent unchanged", got)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			assertNothingSent(t, g, rc, ErrBlocked, c.blocked)
		})
	}
	t.Run("N3_allowed_messages_sent", func(t *testing.T) {
		srv, rc, g := guardedServer(t, nil, nil)
		bodies := []string{
			`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`,
			initializeBody,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":"a-2","method":"tools/list","params":{"cursor":"x","method":"tools/call","s":"\"}"}}`,
		}
		for _, b := range bodies {
			if _, err := do(t, g, http.MethodPost, srv.URL+"/mcp", b, nil); err != nil {
				t.Fatalf("POST %s: %v", b, err)
			}
		}
		seen := rc.seen()
		if len(seen) != len(bodies) {
			t.Fatalf("server saw %d requests, want %d", len(seen), len(bodies))
		}
		for i, s := range seen {
			if s.Body != bodies[i] {
				t.Errorf("body %d = %q, want %q (sent unchanged)", i, s.Body, bodies[i])
			}
		}
		rec := g.Record()
		wantRPC := []struct{ method, id string }{{"server/discover", "1"}, {"initialize", "1"}, {"notifications/initialized", ""}, {"tools/list", "a-2"}}
		for i, w := range wantRPC {
			if ex := rec.Exchanges[i]; ex.RPCMethod != w.method || ex.RPCID != w.id || ex.Status != 200 || ex.Blocked != "" {
				t.Errorf("exchange %d = %+v, want %s id %q status 200", i, ex, w.method, w.id)
			}
		}
		if rec.Requests != 4 || rec.Conns != 1 {
			t.Errorf("Requests, Conns = %d, %d, want 4, 1", rec.Requests, rec.Conns)
		}
	})

	t.Run("N5_credential_headers_stripped", func(t *testing.T) {
		srv, rc, g := guardedServer(t, nil, nil)
		hdr := http.Header{
			"Authorization":       {"Bearer secret"},
			"Cookie":              {"session=secret"},
			"Proxy-Authorization": {"Basic c2VjcmV0"},
		}
		if _, err := do(t, g, http.MethodPost, srv.URL+"/mcp", initializeBody, hdr); err != nil {
			t.Fatal(err)
		}
		for k := range hdr {
			if v := rc.seen()[0].Header.Values(k); len(v) != 0 {
				t.Errorf("server received %s: %q", k, v)
			}
		}
	})
	t.Run("N5_only_mcp_headers_sent", func(t *testing.T) {
		srv, rc, g := guardedServer(t, nil, nil)
		hdr := http.Header{
			"Accept":               {"application/json, text/event-stream"},
			"Content-Type":         {"application/json"},
			"Mcp-Protocol-Version": {"2025-11-25"},
			"Mcp-Session-Id":       {"s-1"},
			"X-Api-Key":            {"secret"},
			"X-Auth-Token":         {"secret"},
			"Api-Key":              {"secret"},
			"X-Forwarded-For":      {"10.0.0.1"},
		}
		if _, err := do(t, g, http.MethodPost, srv.URL+"/mcp", initializeBody, hdr); err != nil {
			t.Fatal(err)
		}
		got := rc.seen()[0].Header
		for _, k := range []string{"Accept", "Content-Type", "Mcp-Protocol-Version", "Mcp-Session-Id"} {
			if got.Get(k) != hdr.Get(k) {
				t.Errorf("%s = %q, want %q", k, got.Get(k), hdr.Get(k))
			}
		}
		for _, k := range []string{"X-Api-Key", "X-Auth-Token", "Api-Key", "X-Forwarded-For"} {
			if v := got.Values(k); len(v) != 0 {
				t.Errorf("server received %s: %q", k, v)
			}
		}
	})
	t.Run("host_header_is_the_checked_url_host", func(t *testing.T) {
		srv, rc, g := guardedServer(t, nil, nil)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(initializeBody))
		req.Host = "internal.test"
		resp, err := g.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if hosts := rc.hosts(); len(hosts) != 1 || hosts[0] != srv.Host+":8443" {
			t.Errorf("server saw Host %q, want [%s:8443]", hosts, srv.Host)
		}
	})
	t.Run("N5_no_cookie_jar", func(t *testing.T) {
		srv, rc, g := guardedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: "tracked"})
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{}`)
		}), nil)
		for range 2 {
			if _, err := do(t, g, http.MethodPost, srv.URL+"/mcp", initializeBody, nil); err != nil {
				t.Fatal(err)
			}
		}
		if g.Client().Jar != nil {
			t.Error("client has a cookie jar")
		}
		if c := rc.seen()[1].Header.Get("Cookie"); c != "" {
			t.Errorf("second request carried Cookie %q", c)
		}
	})
	t.Run("N5_no_client_certificate", func(t *testing.T) {
		rc := &recorder{}
		var asked, offered atomic.Int32
		srv := startLabServer(t, rc, labServerConfig{TLS: func(c *tls.Config) {
			c.ClientAuth = tls.RequestClientCert
			c.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
				asked.Add(1)
				offered.Add(int32(len(raw)))
				return nil
			}
		}})
		g := newTestGuard(t, GuardConfig{Lab: srv.Lab, DialContext: onlyDial(t, srv)})
		if _, err := do(t, g, http.MethodPost, srv.URL, initializeBody, nil); err != nil {
			t.Fatal(err)
		}
		if asked.Load() != 1 || offered.Load() != 0 || rc.seen()[0].ClientCerts != 0 {
			t.Errorf("server asked %d times and got %d client certificates; want asked once, none sent", asked.Load(), offered.Load())
		}
	})
	targets := []struct{ name, url, blocked string }{
		{"N5_userinfo_refused", "https://user:pw@mcp.test:8443/mcp", "N5: " + data.DetailCredential},
		{"N5_credential_param_refused", "https://mcp.test:8443/mcp?api_key=abc", "N5: " + data.DetailCredential},
		{"N7_http_refused", "http://mcp.test:8443/mcp", "N7: " + data.DetailNotHTTPS},
		{"N7_port_8080_refused", "https://mcp.test:8080/mcp", "N7: " + data.DetailPort},
	}
	for _, c := range targets {
		t.Run(c.name, func(t *testing.T) {
			_, rc, g := guardedServer(t, nil, func(cfg *GuardConfig) { cfg.DialContext = noDial(t) })
			if _, err := do(t, g, http.MethodPost, c.url, initializeBody, nil); err == nil {
				t.Fatal("no error")
			}
			ex := assertNothingSent(t, g, rc, ErrTargetNotAllowed, c.blocked)
			if strings.Contains(ex.URL, "pw") {
				t.Errorf("transcript URL %q shows the password", ex.URL)
			}
		})
	}

	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests} {
		t.Run("refusal_nothing_sent_after_"+http.StatusText(status), func(t *testing.T) {
			srv, rc, g := guardedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="https://mcp.test/.well-known/oauth-protected-resource"`)
				w.Header().Set("Retry-After", "120")
				w.WriteHeader(status)
				io.WriteString(w, "go away")
			}), nil)
			if code, err := do(t, g, http.MethodPost, srv.URL+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"server/discover"}`, nil); err != nil || code != status {
				t.Fatalf("first request: %d, %v; want %d", code, err, status)
			}
			_, err := do(t, g, http.MethodPost, srv.URL+"/mcp", initializeBody, nil)
			if err == nil {
				t.Fatal("request after a refusal: no error")
			}
			if n := len(rc.seen()); n != 1 {
				t.Errorf("server saw %d requests, want 1", n)
			}
			rec := g.Record()
			if rec.Refusal != status || rec.Requests != 1 {
				t.Errorf("Refusal, Requests = %d, %d; want %d, 1", rec.Refusal, rec.Requests, status)
			}
			first, second := rec.Exchanges[0], rec.Exchanges[1]
			if first.Header.Get("Retry-After") != "120" || !strings.HasPrefix(first.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("refusal headers not recorded: %v", first.Header)
			}
			if string(first.BodyHead) != "go away" {
				t.Errorf("BodyHead = %q, want the refusal body", first.BodyHead)
			}
			if second.ErrKind != ErrBlocked || !strings.HasPrefix(second.Blocked, "after refusal") || second.RPCMethod != "initialize" {
				t.Errorf("second exchange = %+v, want blocked after refusal", second)
			}
		})
	}
	t.Run("N7_connections_reused_http1", func(t *testing.T) { testReuse(t, false) })
	t.Run("N7_connections_reused_http2", func(t *testing.T) { testReuse(t, true) })
}

// TestRecordDuringCheck reads the record while requests and answers are
// under way, as the flows do; -race proves the copy is safe, and the copy
// must not change under the reader.
func TestRecordDuringCheck(t *testing.T) {
	t.Parallel()
	srv, _, g := guardedServer(t, nil, nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			rec := g.Record()
			before := len(rec.Exchanges)
			var total int64
			for _, ex := range rec.Exchanges {
				total += ex.Bytes
			}
			if total != rec.BytesRead || len(rec.Exchanges) != before {
				t.Errorf("record changed under its reader")
				return
			}
		}
	}()
	for range maxRequestsPerCheck {
		if _, err := do(t, g, http.MethodPost, srv.URL+"/mcp", initializeBody, nil); err != nil {
			t.Error(err)
			break
		}
	}
	close(stop)
	wg.Wait()
	if rec := g.Record(); len(rec.Exchanges) != maxRequestsPerCheck || rec.BytesRead != maxRequestsPerCheck*int64(len(`{"jsonrpc":"2.0","id":1,"result":{}}`)) {
		t.Errorf("%d exchanges, %d bytes; want %d and as many answers' bytes", len(rec.Exchanges), rec.BytesRead, maxRequestsPerCheck)
	}
}

// TestReuseAfterStream proves the HTTP/1.1 side of the one-connection
// goal: the SDK reads a POST's event stream in a goroutine and sends the
// next request as soon as it has its answer; the guard lets the stream end
// first, so the connection is reused instead of a second one dialled. A
// stream that does not end costs at most answerWait, then a new connection.
func TestReuseAfterStream(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		tail  time.Duration // how long the stream stays open after the answer; <0: until the client leaves
		conns int
	}{
		{"stream_ending_soon_reuses_connection", 20 * time.Millisecond, 1},
		{"stream_left_open_costs_one_more_connection", -1, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int32
			srv, _, g := guardedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) > 1 { // only the first answer is a stream
					io.WriteString(w, `{}`)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
				w.(http.Flusher).Flush()
				if c.tail < 0 {
					<-r.Context().Done()
					return
				}
				select {
				case <-time.After(c.tail):
				case <-r.Context().Done():
				}
			}), nil)
			resp, err := post(t, g, srv.URL+"/mcp", initializeBody)
			if err != nil {
				t.Fatal(err)
			}
			// Like the SDK: take the answer event, leave the rest to a reader goroutine.
			head := make([]byte, 16)
			if _, err := io.ReadFull(resp.Body, head); err != nil {
				t.Fatal(err)
			}
			drained := make(chan struct{})
			go func() {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				close(drained)
			}()
			t0 := time.Now()
			if _, err := do(t, g, http.MethodPost, srv.URL+"/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, nil); err != nil {
				t.Fatal(err)
			}
			waited := time.Since(t0)
			if got := g.Record().Conns; got != c.conns {
				t.Errorf("Conns = %d, want %d", got, c.conns)
			}
			if c.tail < 0 && (waited < answerWait || waited > answerWait+5*time.Second) {
				t.Errorf("next request waited %v, want about %v", waited, answerWait)
			}
			g.Close()
			<-drained
		})
	}
}

// testReuse proves one TCP connection carries all requests of a check.
func testReuse(t *testing.T, h2 bool) {
	rc := &recorder{}
	srv := startLabServer(t, rc, labServerConfig{HTTP2: h2})
	g := newTestGuard(t, GuardConfig{Lab: srv.Lab, DialContext: onlyDial(t, srv)})
	for range 5 {
		if _, err := do(t, g, http.MethodPost, srv.URL+"/mcp", initializeBody, nil); err != nil {
			t.Fatal(err)
		}
	}
	remotes := map[string]bool{}
	for _, s := range rc.seen() {
		remotes[s.Remote] = true
	}
	if rec := g.Record(); rec.Conns != 1 || len(remotes) != 1 || rec.Requests != 5 {
		t.Errorf("Conns = %d, server saw %d client ports, Requests = %d; want 1, 1, 5", rec.Conns, len(remotes), rec.Requests)
	}
}

// assertNothingSent checks that the server received nothing, the guard
// dialled nothing, and the last exchange is the refusal.
func assertNothingSent(t *testing.T, g *Guard, rc *recorder, kind ErrKind, blocked string) Exchange {
	t.Helper()
	if n := len(rc.seen()); n != 0 {
		t.Errorf("server received %d requests, want none", n)
	}
	rec := g.Record()
	if rec.Requests != 0 || rec.Conns != 0 {
		t.Errorf("Requests, Conns = %d, %d; want 0, 0", rec.Requests, rec.Conns)
	}
	if len(rec.Exchanges) != 1 {
		t.Fatalf("exchanges = %+v, want exactly the refused one", rec.Exchanges)
	}
	ex := rec.Exchanges[0]
	if ex.Blocked != blocked || ex.ErrKind != kind || ex.Status != 0 {
		t.Errorf("exchange Blocked %q ErrKind %v Status %d; want %q %v 0", ex.Blocked, ex.ErrKind, ex.Status, blocked, kind)
	}
	return ex
}

// TestGuardClose proves rule N10's mechanism: Close ends a request that
// waits for an answer, at once, and refuses every later one.
func TestGuardClose(t *testing.T) {
	t.Run("N10_close_ends_waiting_request", func(t *testing.T) {
		started := make(chan struct{})
		srv, _, g := guardedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(started)
			<-r.Context().Done()
		}), nil)
		done := make(chan error, 1)
		go func() {
			_, err := do(t, g, http.MethodPost, srv.URL+"/mcp", initializeBody, nil)
			done <- err
		}()
		<-started
		g.Close()
		select {
		case err := <-done:
			if err == nil {
				t.Error("request survived Close")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not end the waiting request")
		}
		if ex := lastExchange(t, g); ex.ErrKind != ErrCanceled {
			t.Errorf("ErrKind = %v, want %v", ex.ErrKind, ErrCanceled)
		}
		if _, err := do(t, g, http.MethodPost, srv.URL+"/mcp", initializeBody, nil); err == nil {
			t.Error("request after Close: no error")
		}
		if ex := lastExchange(t, g); ex.ErrKind != ErrCanceled || ex.Blocked == "" {
			t.Errorf("after Close: %+v, want blocked, canceled", ex)
		}
	})
	t.Run("N10_close_ends_open_stream", func(t *testing.T) {
		srv, _, g := guardedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			io.WriteString(w, ": open\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}), nil)
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/sse", nil)
		resp, err := g.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		done := make(chan error, 1)
		go func() {
			_, err := io.Copy(io.Discard, resp.Body)
			done <- err
		}()
		time.Sleep(20 * time.Millisecond) // let the reader block; Close must work either way
		g.Close()
		select {
		case err := <-done:
			if err == nil {
				t.Error("stream ended without error after Close")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not end the open stream")
		}
		g.mu.Lock()
		open := len(g.conns)
		g.mu.Unlock()
		if rec := g.Record(); rec.Conns != 1 || open != 0 {
			t.Errorf("Conns = %d, open after Close = %d; want 1, 0", rec.Conns, open)
		}
	})
}

// TestGuardDeadline proves rule N10 in the guard itself: one Timeout for
// the whole check, all requests together, after which the guard closes its
// connections and sends nothing more, whatever the requests' contexts say.
func TestGuardDeadline(t *testing.T) {
	t.Parallel() // waits out real deadlines: alongside the other waiting tests
	// Every request alone (each) is well within the timeout; make test runs
	// the full version.
	timeout, each, detail := 600*time.Millisecond, 250*time.Millisecond, "no answer in 0.6 s"
	if testing.Short() {
		timeout, each, detail = 300*time.Millisecond, 120*time.Millisecond, "no answer in 0.3 s"
	}
	start := time.Now() // before NewGuard, which starts the clock
	srv, rc, g := guardedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(each):
			io.WriteString(w, `{}`)
		case <-r.Context().Done():
		}
	}), func(c *GuardConfig) { c.Timeout = timeout })
	var done int
	var last error
	var lastTook time.Duration
	for range 5 {
		t0 := time.Now()
		_, last = do(t, g, http.MethodPost, srv.URL+"/mcp", initializeBody, nil) // no deadline on the request
		lastTook = time.Since(t0)
		if last != nil {
			break
		}
		done++
	}
	if last == nil {
		t.Fatalf("5 requests of %v each went through a %v check deadline", each, timeout)
	}
	if done == 0 || lastTook >= timeout {
		t.Errorf("%d requests done, the failing one took %v: want it stopped by the total, not alone", done, lastTook)
	}
	if took := time.Since(start); took < timeout || took > timeout+5*time.Second {
		t.Errorf("check stopped after %v, want just after %v", took, timeout)
	}
	ex := lastExchange(t, g)
	if ex.ErrKind != ErrTimeout || ex.Detail != detail {
		t.Errorf("exchange %+v: want ErrTimeout %q", ex, detail)
	}
	n := len(rc.seen())
	if _, err := do(t, g, http.MethodPost, srv.URL+"/mcp", initializeBody, nil); err == nil {
		t.Error("request after the deadline: no error")
	}
	if ex := lastExchange(t, g); ex.ErrKind != ErrTimeout || ex.Blocked != "N10: "+detail {
		t.Errorf("after the deadline: %+v, want blocked N10", ex)
	}
	if len(rc.seen()) != n {
		t.Error("a request reached the server after the deadline")
	}
	g.mu.Lock()
	open := len(g.conns)
	g.mu.Unlock()
	if open != 0 {
		t.Errorf("%d connections open after the deadline", open)
	}
}

// TestGuardProxyEnv proves that a proxy from the environment is never used:
// the dial check must see the real target (rule N6).
func TestGuardProxyEnv(t *testing.T) {
	proxy := testutil.ListenLoopback8443(t)
	go func() {
		for {
			c, err := proxy.Accept()
			if err != nil {
				return
			}
			t.Errorf("proxy from the environment was contacted by %s", c.RemoteAddr())
			c.Close()
		}
	}()
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY"} {
		t.Setenv(k, "http://"+proxy.Addr().String())
	}
	t.Setenv("NO_PROXY", "")
	t.Run("N6_proxy_env_ignored", func(t *testing.T) {
		srv, rc, g := guardedServer(t, nil, nil)
		if _, err := do(t, g, http.MethodPost, srv.URL+"/mcp", initializeBody, nil); err != nil {
			t.Fatal(err)
		}
		if len(rc.seen()) != 1 {
			t.Error("request did not reach the server directly")
		}
	})
}

// TestGuardTLS proves rule N7's certificate check and its classification.
func TestGuardTLS(t *testing.T) {
	t.Parallel()
	now := time.Now()
	cases := []struct {
		name   string
		cert   func(ca *testutil.CA) tls.Certificate
		kind   ErrKind
		detail string
	}{
		{"N7_valid_certificate", func(ca *testutil.CA) tls.Certificate {
			return ca.MustLeaf(t, now.Add(-time.Hour), now.Add(time.Hour), "mcp.test")
		}, ErrNone, ""},
		{"N7_expired_certificate", func(ca *testutil.CA) tls.Certificate {
			return ca.MustLeaf(t, now.Add(-48*time.Hour), now.Add(-24*time.Hour), "mcp.test")
		}, ErrTLSCert, "certificate has expired"},
		{"N7_certificate_not_yet_valid", func(ca *testutil.CA) tls.Certificate {
			return ca.MustLeaf(t, now.Add(2*time.Hour), now.Add(20*time.Hour), "mcp.test")
		}, ErrTLSCert, "certificate is not yet valid"},
		{"N7_certificate_for_another_name", func(ca *testutil.CA) tls.Certificate {
			return ca.MustLeaf(t, now.Add(-time.Hour), now.Add(time.Hour), "other.test")
		}, ErrTLSCert, "certificate is for another name"},
		{"N7_unknown_authority", func(*testutil.CA) tls.Certificate {
			return testutil.MustCA(t).MustLeaf(t, now.Add(-time.Hour), now.Add(time.Hour), "mcp.test")
		}, ErrTLSCert, "certificate signed by unknown authority"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ca := testutil.MustCA(t)
			cert := c.cert(ca)
			rc := &recorder{}
			srv := startLabServer(t, rc, labServerConfig{CA: ca, Cert: &cert})
			g := newTestGuard(t, GuardConfig{Lab: srv.Lab, DialContext: onlyDial(t, srv)})
			_, err := do(t, g, http.MethodPost, srv.URL+"/mcp", initializeBody, nil)
			if (err == nil) != (c.kind == ErrNone) {
				t.Fatalf("err = %v, want kind %v", err, c.kind)
			}
			ex := lastExchange(t, g)
			if ex.ErrKind != c.kind || ex.Detail != c.detail {
				t.Errorf("ErrKind %v Detail %q; want %v %q (err %v)", ex.ErrKind, ex.Detail, c.kind, c.detail, err)
			}
			if c.kind != ErrNone && len(rc.seen()) != 0 {
				t.Error("request sent over an unverified connection")
			}
		})
	}
}

// TestGuardTLSInjectedClock proves rule N7 verifies certificates on the
// guard's injected clock (GuardConfig.Now), not the wall clock: a
// certificate valid on the injected day is accepted though the wall clock
// finds it expired, and one valid by the wall clock is refused on a day
// before it. The server counts the handshakes it saw, so a refusal is
// known to come from the verification of a certificate it sent.
func TestGuardTLSInjectedClock(t *testing.T) {
	t.Parallel()
	wall := time.Now()
	day := time.Date(2020, 1, 15, 12, 0, 0, 0, time.UTC) // years before the wall clock
	cases := []struct {
		name            string
		notBefore, upTo time.Time
		kind            ErrKind
		detail          string
	}{
		{"valid_on_the_injected_day_expired_on_the_wall_clock", day.Add(-24 * time.Hour), day.Add(24 * time.Hour), ErrNone, ""},
		{"valid_on_the_wall_clock_not_yet_on_the_injected_day", wall.Add(-time.Hour), wall.Add(time.Hour), ErrTLSCert, "certificate is not yet valid"},
		{"expired_on_the_injected_day", day.Add(-48 * time.Hour), day.Add(-24 * time.Hour), ErrTLSCert, "certificate has expired"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ca := testutil.MustCA(t)
			cert := ca.MustLeaf(t, c.notBefore, c.upTo, "mcp.test")
			var hellos atomic.Int32
			rc := &recorder{}
			srv := startLabServer(t, rc, labServerConfig{CA: ca, Cert: &cert, TLS: func(cfg *tls.Config) {
				cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
					hellos.Add(1)
					return nil, nil
				}
			}})
			g := newTestGuard(t, GuardConfig{Lab: srv.Lab, DialContext: onlyDial(t, srv), Now: func() time.Time { return day }})
			_, err := do(t, g, http.MethodPost, srv.URL+"/mcp", initializeBody, nil)
			if (err == nil) != (c.kind == ErrNone) {
				t.Fatalf("err = %v, want kind %v", err, c.kind)
			}
			if ex := lastExchange(t, g); ex.ErrKind != c.kind || ex.Detail != c.detail {
				t.Errorf("ErrKind %v Detail %q; want %v %q", ex.ErrKind, ex.Detail, c.kind, c.detail)
			}
			if n := hellos.Load(); n != 1 {
				t.Errorf("the server saw %d handshakes, want 1", n)
			}
			want := 0
			if c.kind == ErrNone {
				want = 1
			}
			if n := len(rc.seen()); n != want {
				t.Errorf("the server received %d requests, want %d", n, want)
			}
		})
	}
}

// dialCounter wraps a DialContext to count TCP connections.
func dialCounter(next func(context.Context, string, string) (net.Conn, error), n *int) func(context.Context, string, string) (net.Conn, error) {
	var mu sync.Mutex
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		*n++
		mu.Unlock()
		return next(ctx, network, addr)
	}
}

// BenchmarkGuardRoundTrip measures one check's worth of requests (discover,
// initialize, initialized, tools/list) through the guard against a plain
// http.Transport with the same TLS setup, reporting requests and
// connections per check.
func BenchmarkGuardRoundTrip(b *testing.B) {
	bodies := []string{
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`,
		initializeBody,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	}
	for _, h2 := range []bool{false, true} {
		srv := startLabServer(b, &recorder{}, labServerConfig{HTTP2: h2})
		proto := "http1"
		if h2 {
			proto = "http2"
		}
		run := func(b *testing.B, newClient func() (*http.Client, func(), *int)) {
			b.ReportAllocs()
			reqs := 0
			conns := 0
			for b.Loop() {
				c, done, n := newClient()
				for _, body := range bodies {
					req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					resp, err := c.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					reqs++
				}
				done()
				conns += *n
			}
			b.ReportMetric(float64(reqs)/float64(b.N), "requests/check")
			b.ReportMetric(float64(conns)/float64(b.N), "conns/check")
		}
		b.Run(proto+"/guard", func(b *testing.B) {
			run(b, func() (*http.Client, func(), *int) {
				g, err := NewGuard(GuardConfig{Lab: srv.Lab})
				if err != nil {
					b.Fatal(err)
				}
				n := new(int)
				return g.Client(), func() { *n = g.Record().Conns; g.Close() }, n
			})
		})
		b.Run(proto+"/baseline", func(b *testing.B) {
			roots, err := srv.Lab.rootCAs()
			if err != nil {
				b.Fatal(err)
			}
			run(b, func() (*http.Client, func(), *int) {
				n := new(int)
				var d net.Dialer
				tr := &http.Transport{
					DialContext: dialCounter(func(ctx context.Context, network, _ string) (net.Conn, error) {
						return d.DialContext(ctx, network, srv.Addr.String())
					}, n),
					TLSClientConfig:   &tls.Config{RootCAs: roots},
					ForceAttemptHTTP2: true,
				}
				return &http.Client{Transport: tr}, tr.CloseIdleConnections, n
			})
		})
	}
}

// FuzzInspectRPC checks rule N3's parser against encoding/json's reading of
// the same body: whatever the guard lets through is one object whose
// method is allowed, read the same way by a case-sensitive and a
// case-insensitive decoder.
func FuzzInspectRPC(f *testing.F) {
	for _, s := range []string{
		initializeBody,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{"cursor":"c"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/list"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"me\u0074hod":"tools/list"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"method":"tools/call","a":"\"}","b":[1,{"c":null}]}}`,
		` {"id":-1.5e3 ,"jsonrpc":"2.0","method":"tools\/list"} `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		method, _, forbidden := inspectRPC(body)
		if forbidden != "" {
			return
		}
		if !slices.Contains(data.AllowedRPCMethods, method) {
			t.Fatalf("allowed %q with method %q", body, method)
		}
		var exact map[string]any
		if err := json.Unmarshal(body, &exact); err != nil {
			t.Fatalf("allowed a body encoding/json rejects: %q: %v", body, err)
		}
		if exact["method"] != method {
			t.Fatalf("allowed %q: guard read %q, a decoder reads %v", body, method, exact["method"])
		}
		var folded struct{ Method string }
		if err := json.Unmarshal(body, &folded); err != nil || folded.Method != method {
			t.Fatalf("allowed %q: a case-insensitive decoder reads %q", body, folded.Method)
		}
	})
}
