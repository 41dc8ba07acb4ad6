package check

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/testutil"
)

// wireRecorder wraps every flow test server. It records the exact sequence of
// requests received ("POST initialize", "GET", ...) and fails the test when
// anything arrives that the checks page promises never to send: a method
// other than GET and POST, a GET outside the legacy SSE flow, a JSON-RPC
// message other than the four allowed (no response, ping,
// notifications/cancelled, tools/call), a credential header, or another
// User-Agent than the build's.
type wireRecorder struct {
	tb       testing.TB
	allowGET bool // legacy HTTP+SSE: the GET that opens the stream belongs to the flow
	next     http.Handler

	mu         sync.Mutex
	got        []string      // "METHOD rpc-method" per request, in arrival order
	headers    []http.Header // headers of each request
	remote     []string      // remote address of each request
	violations []string
}

// newWireRecorder wraps next and checks, when the test ends, that nothing
// forbidden arrived.
func newWireRecorder(tb testing.TB, next http.Handler, allowGET bool) *wireRecorder {
	r := &wireRecorder{tb: tb, allowGET: allowGET, next: next}
	tb.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, v := range r.violations {
			tb.Errorf("server received something a check must never send: %s", v)
		}
	})
	return r
}

// ServeHTTP records req, checks it against rules N1-N3 and N5, and passes it
// on with its body restored.
func (r *wireRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	line := req.Method
	var bad []string
	switch req.Method {
	case http.MethodPost:
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		method, why := rpcOf(body)
		line += " " + method
		if why != "" {
			bad = append(bad, "N3: "+why)
		}
	case http.MethodGet:
		if !r.allowGET {
			bad = append(bad, "N2/N4: a GET outside the legacy SSE flow")
		}
	default:
		bad = append(bad, "N2: method "+req.Method)
	}
	if ua := req.Header.Get("User-Agent"); ua != data.UserAgent() {
		bad = append(bad, fmt.Sprintf("N1: User-Agent %q", ua))
	}
	for _, h := range []string{"Authorization", "Cookie", "Proxy-Authorization"} {
		if req.Header.Get(h) != "" {
			bad = append(bad, "N5: header "+h)
		}
	}
	r.mu.Lock()
	r.got = append(r.got, line)
	r.headers = append(r.headers, req.Header.Clone())
	r.remote = append(r.remote, req.RemoteAddr)
	for _, b := range bad {
		r.violations = append(r.violations, fmt.Sprintf("%s (request %d, %s)", b, len(r.got), line))
	}
	r.mu.Unlock()
	r.next.ServeHTTP(w, req)
}

// rpcOf names the JSON-RPC message of a POST body and says why rule N3
// forbids it, "" when it is one of the four allowed.
func rpcOf(body []byte) (method, forbidden string) {
	var m struct {
		Method *string          `json:"method"`
		ID     *json.RawMessage `json:"id"`
		Result *json.RawMessage `json:"result"`
		Error  *json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return "?", "not a single JSON-RPC message"
	}
	if m.Method == nil {
		return "response", "a JSON-RPC response"
	}
	if !slices.Contains(data.AllowedRPCMethods, *m.Method) {
		return *m.Method, *m.Method
	}
	return *m.Method, ""
}

// requests returns the sequence received so far.
func (r *wireRecorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// header returns the headers of the i-th request.
func (r *wireRecorder) header(i int) http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.headers[i]
}

// wantSequence fails the test unless exactly want arrived, in order.
func (r *wireRecorder) wantSequence(tb testing.TB, want ...string) {
	tb.Helper()
	if want == nil {
		want = []string{}
	}
	got := r.requests()
	if got == nil {
		got = []string{}
	}
	if !slices.Equal(got, want) {
		tb.Errorf("server received\n  %q\nwant\n  %q", got, want)
	}
}

// flowServer is a lab TLS server (random 127.x.y.z:8443, HTTP/2 offered)
// behind a wireRecorder.
type flowServer struct {
	*labServer
	rec *wireRecorder
}

// serverOpts configures startFlowServer; the zero value is an HTTP/2 server
// for mcp.test with a fresh CA, where a GET is a violation.
type serverOpts struct {
	legacySSE   bool         // allow the GET of the legacy SSE flow
	http1       bool         // offer HTTP/1.1 only
	host        string       // "" means mcp.test
	ca          *testutil.CA // nil means a fresh one
	certHost    string       // the certificate's name when not host's
	certExpired bool         // a certificate that expired an hour ago
}

// startFlowServer starts h behind a wireRecorder.
func startFlowServer(tb testing.TB, h http.Handler, o serverOpts) *flowServer {
	tb.Helper()
	rec := newWireRecorder(tb, h, o.legacySSE)
	cfg := labServerConfig{Host: o.host, CA: o.ca, HTTP2: !o.http1}
	if o.certHost != "" || o.certExpired {
		if cfg.CA == nil {
			cfg.CA = testutil.MustCA(tb)
		}
		name, from, until := o.certHost, time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
		if name == "" {
			name = cmp.Or(o.host, "mcp.test")
		}
		if o.certExpired {
			from, until = time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour)
		}
		c := cfg.CA.MustLeaf(tb, from, until, name)
		cfg.Cert = &c
	}
	ls := startLabServer(tb, rec, cfg)
	return &flowServer{labServer: ls, rec: rec}
}

// target is the server's MCP address as a check target of unknown era.
func (s *flowServer) target() Target {
	return Target{ID: "srv", URL: s.URL + "/mcp"}
}

// notFoundResolver answers every name "not found": no test resolves a real
// name, so nothing leaves 127.0.0.0/8.
func notFoundResolver(_ context.Context, host string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// newTestChecker returns a Checker in the lab setting lab, with a resolver
// that knows no name and the given timeout (0 means 10 s); mods change the
// config further.
func newTestChecker(tb testing.TB, lab Lab, timeout time.Duration, mods ...func(*Config)) *Checker {
	tb.Helper()
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	cfg := Config{Lab: lab, Timeout: timeout, Resolver: notFoundResolver}
	for _, m := range mods {
		m(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return c
}

// mergeLabs returns one lab setting resolving the names of every server;
// they must share a CA.
func mergeLabs(srvs ...*flowServer) Lab {
	lab := Lab{Enabled: true, Resolve: map[string]string{}}
	for _, s := range srvs {
		for k, v := range s.Lab.Resolve {
			lab.Resolve[k] = v
		}
		lab.CAFile = s.Lab.CAFile
	}
	return lab
}

// --- go-sdk servers ---

type noArgs struct{}

// sdkServer returns a go-sdk MCP server with the named tools; opts may
// restrict its protocol versions or page size.
func sdkServer(opts *mcp.ServerOptions, tools ...string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test-server", Version: "1.2.3",
		Title: "Test <Server>", Description: "Serves the tests.", WebsiteURL: "https://test.example/docs"}, opts)
	for _, name := range tools {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: "test tool " + name},
			func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{}, nil, nil
			})
	}
	return s
}

// streamableHandler serves s over Streamable HTTP; localhost protection is
// off because lab servers listen on loopback under a fake name.
func streamableHandler(s *mcp.Server, stateless, jsonResponse bool) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{
		Stateless:                  stateless,
		JSONResponse:               jsonResponse,
		DisableLocalhostProtection: true,
	})
}

// sseHandler serves s over the legacy HTTP+SSE transport.
func sseHandler(s *mcp.Server) http.Handler {
	return mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, &mcp.SSEOptions{DisableLocalhostProtection: true})
}

// --- raw JSON-RPC servers, for other SDKs and hostile servers ---

// rpcRequest is a JSON-RPC message a raw server received.
type rpcRequest struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params json.RawMessage `json:"params"`
}

// rpcFunc answers one JSON-RPC message of a raw server.
type rpcFunc func(w http.ResponseWriter, r *http.Request, m rpcRequest)

// rpcMux is a raw Streamable HTTP server: POSTs are dispatched on their
// JSON-RPC method; a method with no entry gets -32601 method not found (as
// mcp-go answers server/discover); anything else is 405.
type rpcMux map[string]rpcFunc

// ServeHTTP dispatches a POST on its JSON-RPC method.
func (m rpcMux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var msg rpcRequest
	if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
		http.Error(w, "bad JSON", http.StatusBadRequest)
		return
	}
	if f, ok := m[msg.Method]; ok {
		f(w, r, msg)
		return
	}
	if msg.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	writeRPCError(w, msg.ID, -32601, "Method not found")
}

// legacyMux is a raw pre-2026 server answering initialize with protocol,
// accepting notifications/initialized with 202 and listing tools; it does
// not know server/discover. Tests override entries.
func legacyMux(protocol string, tools ...string) rpcMux {
	return rpcMux{
		"initialize": func(w http.ResponseWriter, _ *http.Request, m rpcRequest) {
			writeResult(w, m.ID, initResult(protocol))
		},
		"notifications/initialized": acceptNotification,
		"tools/list": func(w http.ResponseWriter, _ *http.Request, m rpcRequest) {
			writeResult(w, m.ID, map[string]any{"tools": toolList(tools...)})
		},
	}
}

// acceptNotification answers a notification with 202 and no body.
func acceptNotification(w http.ResponseWriter, _ *http.Request, _ rpcRequest) {
	w.WriteHeader(http.StatusAccepted)
}

// initResult is an initialize result for protocol.
func initResult(protocol string) map[string]any {
	return map[string]any{
		"protocolVersion": protocol,
		"capabilities":    map[string]any{"tools": map[string]any{}},
		"serverInfo":      map[string]any{"name": "raw-server", "version": "0.9"},
	}
}

// toolList is a tools array of the named tools.
func toolList(names ...string) []map[string]any {
	out := []map[string]any{}
	for _, n := range names {
		out = append(out, map[string]any{"name": n, "inputSchema": map[string]any{"type": "object"}})
	}
	return out
}

// rpcResponse encodes a JSON-RPC answer.
func rpcResponse(id json.RawMessage, result any, errObj any) []byte {
	m := map[string]any{"jsonrpc": "2.0", "id": id}
	if errObj != nil {
		m["error"] = errObj
	} else {
		m["result"] = result
	}
	b, _ := json.Marshal(m)
	return b
}

// writeResult writes a JSON-RPC result as application/json.
func writeResult(w http.ResponseWriter, id json.RawMessage, result any) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(rpcResponse(id, result, nil))
}

// writeRPCError writes a JSON-RPC error as application/json with status 200.
func writeRPCError(w http.ResponseWriter, id json.RawMessage, code int, msg string) {
	writeRPCErrorStatus(w, http.StatusOK, id, code, msg)
}

// writeRPCErrorStatus writes a JSON-RPC error with an HTTP status.
func writeRPCErrorStatus(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(rpcResponse(id, nil, map[string]any{"code": code, "message": msg}))
}

// writeSSE writes JSON-RPC messages as one event stream (as the TypeScript
// and Python SDKs answer by default), each a "message" event.
func writeSSE(w http.ResponseWriter, msgs ...[]byte) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, m := range msgs {
		fmt.Fprintf(w, "event: message\r\ndata: %s\r\n\r\n", m)
	}
}

// status answers every request with code, headers and body.
func answerWith(code int, body string, hdr ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// legacySSEServer is a raw legacy HTTP+SSE server as the Python and
// TypeScript SDKs serve it: GET streamPath opens a stream whose first event
// names postPath?session_id=...; POSTs there are answered 202 and their
// answers sent on the stream; a POST to streamPath gets postToStream.
type legacySSEServer struct {
	streamPath, postPath string
	postToStream         http.HandlerFunc // what a POST to the stream path gets (405, 404 HTML...)
	mux                  rpcMux           // answers, written to the stream

	mu      sync.Mutex
	streams map[string]chan []byte
}

func newLegacySSEServer(streamPath, postPath string, postToStream http.HandlerFunc, mux rpcMux) *legacySSEServer {
	return &legacySSEServer{streamPath: streamPath, postPath: postPath, postToStream: postToStream, mux: mux, streams: map[string]chan []byte{}}
}

// ServeHTTP serves the stream, the posts and the stream path's POST.
func (s *legacySSEServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == s.streamPath:
		s.stream(w, r)
	case r.Method == http.MethodPost && r.URL.Path == s.postPath:
		s.post(w, r)
	case r.Method == http.MethodPost && r.URL.Path == s.streamPath:
		s.postToStream(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (s *legacySSEServer) stream(w http.ResponseWriter, r *http.Request) {
	id := fmt.Sprintf("s%d", time.Now().UnixNano())
	ch := make(chan []byte, 16)
	s.mu.Lock()
	s.streams[id] = ch
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "event: endpoint\r\ndata: %s?session_id=%s\r\n\r\n", s.postPath, id)
	w.(http.Flusher).Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case m := <-ch:
			fmt.Fprintf(w, "event: message\r\ndata: %s\r\n\r\n", m)
			w.(http.Flusher).Flush()
		}
	}
}

func (s *legacySSEServer) post(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ch := s.streams[r.URL.Query().Get("session_id")]
	s.mu.Unlock()
	if ch == nil {
		http.Error(w, "Could not find session", http.StatusNotFound)
		return
	}
	var msg rpcRequest
	if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
		http.Error(w, "bad JSON", http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusAccepted)
	io.WriteString(w, "Accepted")
	if f, ok := s.mux[msg.Method]; ok && msg.ID != nil {
		rw := &bufferedAnswer{header: http.Header{}}
		f(rw, r, msg)
		ch <- bytes.TrimSpace(rw.body.Bytes())
	}
}

// bufferedAnswer captures what an rpcFunc writes, for the legacy stream.
type bufferedAnswer struct {
	header http.Header
	body   bytes.Buffer
}

func (b *bufferedAnswer) Header() http.Header         { return b.header }
func (b *bufferedAnswer) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *bufferedAnswer) WriteHeader(int)             {}
