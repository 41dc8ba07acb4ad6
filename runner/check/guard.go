package check

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"plug.directory/prober/data"
)

// GuardConfig configures one check's guard.
type GuardConfig struct {
	UserAgent  string     // exact User-Agent (rule N1); "" means data.UserAgent()
	SourceAddr netip.Addr // rule N11: local IPv4 address checks leave from; zero means any
	Lab        Lab
	// Resolver looks up the IPv4 addresses of host; nil means
	// net.DefaultResolver asked for "ip4" only. A not-found answer should be
	// a *net.DNSError with IsNotFound.
	Resolver func(ctx context.Context, host string) ([]netip.Addr, error)
	// DialContext opens the TCP connection to an address the guard has
	// already checked ("a.b.c.d:port", network "tcp4"); nil means a
	// net.Dialer bound to SourceAddr. Tests inject it.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	Now         func() time.Time // nil means time.Now
	// Timeout bounds the whole check, all requests together (rule N10),
	// counted from NewGuard; when it passes the guard closes every
	// connection and refuses every later request. 0 means
	// data.CheckTimeout; tests inject short ones.
	Timeout time.Duration
}

// Guard is the network guard of one check: the http.RoundTripper, dialer and
// http.Client every byte of the check passes through (rules N1-N11). It
// refuses what the rules forbid without sending it, records every exchange
// for classification, and closes all its connections on Close. A Guard is
// for one check; it is safe for concurrent use by that check's goroutines.
type Guard struct {
	cfg       GuardConfig
	transport *http.Transport
	client    *http.Client

	ctx    context.Context // canceled by Close: ends lookups and dials in flight
	cancel context.CancelFunc
	timer  *time.Timer // rule N10

	mu       sync.Mutex
	ex       []*Exchange
	conns    map[*trackedConn]struct{}
	nconns   int
	requests int
	refusal  int
	closed   bool
	expired  bool // closed by the N10 timer
	// HTTP/1.1 answers to POSTs still being read, and a channel closed when
	// the last one ends: see awaitAnswers.
	open     int
	openDone chan struct{}
}

// answerWait bounds how long a request waits for the previous answer of
// the check to be read to its end (see awaitAnswers).
const answerWait = 100 * time.Millisecond

// awaitAnswers lets an HTTP/1.1 answer still being read (the SDK reads a
// POST's event stream in its own goroutine and sends the next request as
// soon as it has the result) reach its end before the next request, so the
// connection is back in the pool and reused: one connection per check
// instead of a race for a second one. It waits at most answerWait (a server
// that keeps a finished stream open costs a second connection, not a
// stall) and never past ctx.
func (g *Guard) awaitAnswers(ctx context.Context) {
	g.mu.Lock()
	done := g.openDone
	g.mu.Unlock()
	if done == nil {
		return
	}
	t := time.NewTimer(answerWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	}
}

// answerOpened and answerEnded count open HTTP/1.1 answers to POSTs.
// Callers hold g.mu.
func (g *Guard) answerOpened() {
	if g.open == 0 {
		g.openDone = make(chan struct{})
	}
	g.open++
}

func (g *Guard) answerEnded() {
	g.open--
	if g.open == 0 {
		close(g.openDone)
		g.openDone = nil
	}
}

// NewGuard returns a guard for one check, with fresh state and no
// connections. It fails when the lab setting is invalid, its CA file cannot
// be read, or SourceAddr is not IPv4.
func NewGuard(cfg GuardConfig) (*Guard, error) {
	if err := cfg.Lab.Validate(); err != nil {
		return nil, fmt.Errorf("new guard: %w", err)
	}
	if cfg.SourceAddr.IsValid() && !cfg.SourceAddr.Unmap().Is4() {
		return nil, fmt.Errorf("new guard: source address %s is not IPv4", cfg.SourceAddr)
	}
	cfg.SourceAddr = cfg.SourceAddr.Unmap()
	cfg.Lab = cfg.Lab.normalized()
	if cfg.UserAgent == "" {
		cfg.UserAgent = data.UserAgent()
	}
	roots, err := cfg.Lab.rootCAs()
	if err != nil {
		return nil, fmt.Errorf("new guard: %w", err)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = data.CheckTimeout
	}
	g := &Guard{cfg: cfg, conns: make(map[*trackedConn]struct{})}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	g.transport = &http.Transport{
		Proxy:       nil, // never a proxy from the environment: the dial check must see the real target
		DialContext: g.dial,
		TLSClientConfig: &tls.Config{
			RootCAs:    roots,
			MinVersion: tls.VersionTLS12,
			// Rule N5: never a client certificate, even when asked.
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				return &tls.Certificate{}, nil
			},
		},
		ForceAttemptHTTP2: true, // one connection for all requests, event streams included
		// Headers are part of the answer too (rule N9): net/http's default
		// would read up to 10 MB of them.
		MaxResponseHeaderBytes: maxHeaderBytes,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        data.CheckTimeout,
		// DisableCompression stays false: the transport asks for gzip and
		// decompresses before answerBody counts (rule N9 counts after
		// decompression).
	}
	g.client = &http.Client{
		Transport:     g,
		CheckRedirect: g.checkRedirect,
		Jar:           nil, // rule N5: no cookie jar
	}
	g.timer = time.AfterFunc(cfg.Timeout, g.expire)
	return g, nil
}

// expire is the N10 deadline: the check gives up by closing its
// connections.
func (g *Guard) expire() {
	g.mu.Lock()
	if !g.closed {
		g.expired = true
	}
	g.mu.Unlock()
	g.Close()
}

// noAnswerIn is the N10 detail as results show it: "no answer in 45 s".
func noAnswerIn(d time.Duration) string {
	return "no answer in " + strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}

// ended returns why the guard no longer sends anything (the N10 deadline
// passed, or the check closed it), or nil while it is open.
func (g *Guard) ended() *GuardError {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.expired:
		return &GuardError{Kind: ErrTimeout, Rule: "N10", Detail: noAnswerIn(g.cfg.Timeout)}
	case g.closed:
		return &GuardError{Kind: ErrCanceled, Detail: "check already ended"}
	}
	return nil
}

// Client returns the *http.Client every request of the check must use: the
// guard as transport, no proxy, no cookie jar, and the redirect policy of
// rule N8.
func (g *Guard) Client() *http.Client { return g.client }

// Close closes every connection of the check, idle or in use, ends lookups
// and dials in flight, and refuses every later request. The check calls it
// at its end; the guard calls it itself when GuardConfig.Timeout passes
// (rule N10). It may be called more than once.
func (g *Guard) Close() {
	g.timer.Stop()
	g.cancel()
	g.mu.Lock()
	g.closed = true
	conns := make([]*trackedConn, 0, len(g.conns))
	for c := range g.conns {
		conns = append(conns, c)
	}
	g.mu.Unlock()
	g.transport.CloseIdleConnections()
	for _, c := range conns {
		c.Close()
	}
}

func (g *Guard) now() time.Time {
	if g.cfg.Now != nil {
		return g.cfg.Now()
	}
	return time.Now()
}

func (g *Guard) append(ex *Exchange) {
	g.mu.Lock()
	g.ex = append(g.ex, ex)
	g.mu.Unlock()
}

// Record returns a copy of what the guard saw so far, for classification
// and the transcript.
func (g *Guard) Record() Record {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := Record{Conns: g.nconns, Requests: g.requests, Refusal: g.refusal}
	r.Exchanges = make([]Exchange, len(g.ex))
	for i, ex := range g.ex {
		e := *ex
		e.Header = ex.Header.Clone()
		e.BodyHead = slices.Clone(ex.BodyHead)
		r.Exchanges[i] = e
		r.BytesRead += ex.Bytes
	}
	return r
}

// Record is what the guard saw during one check.
type Record struct {
	Exchanges []Exchange // in the order requests were made, refused ones included
	Conns     int        // TCP connections dialled
	Requests  int        // HTTP requests actually sent (refused ones not counted)
	BytesRead int64      // answer bytes read after decompression, all exchanges
	Refusal   int        // first 401/403/429 status seen (then the guard sends nothing more), 0 if none
}

// Exchange is one request of a check: sent and answered, sent and failed, or
// refused by the guard before anything was sent.
type Exchange struct {
	Start     time.Time
	Duration  time.Duration // until the answer's body was closed or failed
	Method    string        // GET or POST (or the refused method)
	URL       string        // user-info password redacted
	Hop       int           // 0 for a request the check made, n for its n-th redirect
	RPCMethod string        // JSON-RPC method of a POST body ("" for GET); "response" for a JSON-RPC response; "batch" for an array
	RPCID     string        // id of a JSON-RPC request as sent, "" for a notification
	Status    int           // HTTP status, 0 if no response
	Header    http.Header   // answer headers (WWW-Authenticate, Retry-After, Content-Type, Location, Mcp-Session-Id...)
	BodyHead  []byte        // first 4 KiB of the answer body as read (after decompression)
	Bytes     int64         // bytes read of this answer after decompression
	Blocked   string        // non-empty: the guard refused to send it and why ("N2: method DELETE", "N3: notifications/cancelled", "after refusal")
	Err       string        // error text, for the transcript only
	ErrKind   ErrKind       // classified by the guard at the point of failure
	Detail    string        // short human detail of ErrKind, e.g. "certificate has expired"
}

// ErrKind classifies what went wrong in an exchange, decided by the guard
// where it happened, so nobody classifies from error strings.
type ErrKind int

// The kinds of failure the guard records.
const (
	ErrNone                 ErrKind = iota
	ErrDNSNotFound                  // the name does not exist
	ErrDNS                          // the name could not be resolved for another reason
	ErrNoPublicAddr                 // resolves to no public IPv4 address (rule N6)
	ErrRefused                      // connection refused
	ErrTimeout                      // dial, handshake or answer timed out (context deadline or the guard's N10 Timeout)
	ErrTLSCert                      // certificate not accepted; Detail says why
	ErrTLSOther                     // other TLS failure (handshake, protocol version, alert)
	ErrTooLarge                     // answer over 1 MB (rule N9)
	ErrTooManyRedirects             // a 4th redirect (rule N8)
	ErrRedirectNotAllowed           // redirect to http://, another port, credentials or a non-public IP literal (not_checkable)
	ErrBlocked                      // the guard refused a request (rules N2, N3, after a refusal)
	ErrTargetNotAllowed             // a request (not a redirect) to a URL failing N5-N7, e.g. an SSE endpoint on port 8080
	ErrCanceled                     // the check ended it: context canceled or Guard closed
	ErrNetwork                      // other connection failure (reset, closed by the server)
	ErrRedirectMethodChange         // a 301/302/303 that would turn POST into GET (rule N8; failing, not not_checkable)
)

var errKindNames = [...]string{
	ErrNone: "", ErrDNSNotFound: "dns_not_found", ErrDNS: "dns", ErrNoPublicAddr: "no_public_addr",
	ErrRefused: "conn_refused", ErrTimeout: "timeout", ErrTLSCert: "tls_cert", ErrTLSOther: "tls",
	ErrTooLarge: "too_large", ErrTooManyRedirects: "too_many_redirects",
	ErrRedirectNotAllowed: "redirect_not_allowed", ErrBlocked: "blocked",
	ErrTargetNotAllowed: "target_not_allowed", ErrCanceled: "canceled", ErrNetwork: "network",
	ErrRedirectMethodChange: "redirect_method_change",
}

// String returns the kind's snake_case name ("" for ErrNone).
func (k ErrKind) String() string {
	if k >= 0 && int(k) < len(errKindNames) {
		return errKindNames[k]
	}
	return fmt.Sprintf("ErrKind(%d)", int(k))
}

// MarshalText encodes the kind as its name, for JSON transcripts.
func (k ErrKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// GuardError is the error the guard returns when it refuses a request or
// stops an answer. Callers classify from Record, not from this error; it
// exists so the transcript and errors.As can name the rule.
type GuardError struct {
	Kind   ErrKind
	Rule   string // "N2", "N3", ... or "" for a refusal that follows a 401/403/429
	Detail string // short human detail
	Err    error  // underlying error, if any
}

// Error names the rule and the detail.
func (e *GuardError) Error() string {
	s := e.Detail
	if e.Rule != "" {
		s = e.Rule + ": " + s
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return "guard: " + s
}

// Unwrap returns the underlying error.
func (e *GuardError) Unwrap() error { return e.Err }

// refusalStatus reports the statuses after which nothing more is sent.
func refusalStatus(code int) bool {
	return code == http.StatusUnauthorized || code == http.StatusForbidden || code == http.StatusTooManyRequests
}

// RoundTrip sends req if rules N1-N7 allow it, and wraps the answer body in
// the N9 cap. A refused request returns a *GuardError and nothing is sent.
// It always closes req.Body.
func (g *Guard) RoundTrip(req *http.Request) (*http.Response, error) {
	ex := &Exchange{Start: g.now(), Method: req.Method, URL: redact(req.URL), Hop: hopOf(req)}
	var body []byte
	if req.Body != nil {
		b, err := readRequestBody(req.Body)
		if err != nil {
			ex.Blocked, ex.ErrKind, ex.Detail, ex.Err = "unreadable request body", ErrBlocked, "unreadable request body", err.Error()
			g.append(ex)
			return nil, fmt.Errorf("guard: read request body: %w", err)
		}
		body = b
	}
	var n3 string
	if req.Method == http.MethodPost {
		ex.RPCMethod, ex.RPCID, n3 = inspectRPC(body)
	}
	if gerr := g.admit(req, body, ex.RPCMethod, n3); gerr != nil {
		ex.Blocked = strings.TrimPrefix(gerr.Rule+": ", ": ") + gerr.Detail
		ex.ErrKind, ex.Detail, ex.Err = gerr.Kind, gerr.Detail, gerr.Error()
		g.append(ex)
		return nil, gerr
	}

	out := req.Clone(req.Context())
	out.Header = scrubHeader(req.Header, g.cfg.UserAgent)
	out.Host = "" // the Host header is the URL's host, the one CheckTarget and the dialer checked
	if len(body) > 0 {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.ContentLength = int64(len(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	} else {
		out.Body, out.ContentLength, out.GetBody = nil, 0, nil
	}
	g.awaitAnswers(req.Context())
	g.mu.Lock()
	g.requests++
	g.ex = append(g.ex, ex)
	g.mu.Unlock()

	resp, err := g.transport.RoundTrip(out)
	if err != nil {
		kind, detail := g.classify(err, req)
		g.mu.Lock()
		ex.ErrKind, ex.Detail, ex.Err = kind, detail, err.Error()
		ex.Duration = g.now().Sub(ex.Start)
		g.mu.Unlock()
		return nil, err
	}
	g.mu.Lock()
	ex.Status = resp.StatusCode
	ex.Header = resp.Header.Clone()
	if refusalStatus(resp.StatusCode) && g.refusal == 0 {
		g.refusal = resp.StatusCode
	}
	g.mu.Unlock()
	resp.Request = req
	resp.Body = newAnswerBody(g, ex, resp)
	return resp, nil
}

// admit decides whether req may be sent: not after Close, not after a
// refusal, GET and POST only (N2), a URL passing N5-N7, and for POST a body
// of allowed JSON-RPC messages (N3, n3 is inspectRPC's verdict) whose MCP
// routing headers say the same.
func (g *Guard) admit(req *http.Request, body []byte, rpcMethod, n3 string) *GuardError {
	if gerr := g.ended(); gerr != nil {
		return gerr
	}
	g.mu.Lock()
	refusal := g.refusal
	g.mu.Unlock()
	switch {
	case refusal != 0:
		return &GuardError{Kind: ErrBlocked, Detail: fmt.Sprintf("after refusal (HTTP %d)", refusal)}
	case !slices.Contains(data.AllowedMethods, req.Method):
		return &GuardError{Kind: ErrBlocked, Rule: "N2", Detail: "method " + req.Method}
	case req.Method == http.MethodGet && len(body) > 0:
		return &GuardError{Kind: ErrBlocked, Rule: "N2", Detail: "GET with a body"}
	}
	if err := CheckTarget(req.URL, g.cfg.Lab); err != nil {
		te := err.(*TargetError)
		return &GuardError{Kind: ErrTargetNotAllowed, Rule: te.Rule, Detail: te.Reason, Err: err}
	}
	if req.Method == http.MethodPost && n3 != "" {
		return &GuardError{Kind: ErrBlocked, Rule: "N3", Detail: n3}
	}
	if why := mcpHeaderMismatch(req, rpcMethod); why != "" {
		return &GuardError{Kind: ErrBlocked, Rule: "N3", Detail: why}
	}
	return nil
}

// mcpHeaderMismatch checks the MCP routing headers of protocol 2026-07-28
// (servers may route on them instead of the body): Mcp-Method must repeat
// the body's method exactly, and Mcp-Name and Mcp-Param-* (used only by
// tools/call, resources/read and prompts/get) are never sent. It returns why
// not, or "".
func mcpHeaderMismatch(req *http.Request, rpcMethod string) string {
	if v := req.Header.Values("Mcp-Method"); len(v) > 0 {
		if req.Method != http.MethodPost || len(v) != 1 || v[0] != rpcMethod {
			return "Mcp-Method header " + strings.Join(v, ",") + " does not match the message"
		}
	}
	for k := range req.Header {
		if k == "Mcp-Name" || strings.HasPrefix(k, "Mcp-Param-") {
			return k + " header"
		}
	}
	return ""
}

// hopOf counts the redirects that led to req.
func hopOf(req *http.Request) int {
	n := 0
	for r := req.Response; r != nil && r.Request != nil; r = r.Request.Response {
		n++
	}
	return n
}

// maxHeaderBytes bounds the response headers of one answer (rule N9).
const maxHeaderBytes = 64 << 10

// maxRequestBody bounds what the guard reads of a request body it must
// inspect; the prober's own requests are a few hundred bytes.
const maxRequestBody = 1 << 20

// readRequestBody reads and closes a request body.
func readRequestBody(rc io.ReadCloser) ([]byte, error) {
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxRequestBody+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxRequestBody {
		return nil, errors.New("request body over 1 MB")
	}
	return b, nil
}

// sentHeaders are the only request headers a check sends besides
// User-Agent and what the transport adds (Host, Content-Length,
// Accept-Encoding: gzip): the ones the MCP transports need. Everything else
// is dropped, so no header can carry a credential (rule N5), whatever its
// name (Authorization, Cookie, X-Api-Key...).
var sentHeaders = []string{"Accept", "Content-Type", "Mcp-Protocol-Version", "Mcp-Session-Id", "Mcp-Method", "Last-Event-Id"}

// scrubHeader returns the header a request is sent with: the exact
// User-Agent (N1) and only the sentHeaders of h (N5). The caller's
// Accept-Encoding is dropped too, so the transport asks for gzip itself and
// decompresses before the N9 count.
func scrubHeader(h http.Header, ua string) http.Header {
	out := make(http.Header, len(sentHeaders)+1)
	for _, k := range sentHeaders {
		if v := h.Values(k); len(v) > 0 {
			out[k] = slices.Clone(v)
		}
	}
	out.Set("User-Agent", ua)
	return out
}

// notJSONRPC is the N3 verdict on a body the guard cannot read as exactly
// one JSON-RPC 2.0 message.
const notJSONRPC = "not a JSON-RPC message"

// rpcKeys are the only members a JSON-RPC message may have. Anything else
// (including a case variant such as "Method", which a case-insensitive
// decoder on the server might read instead of "method") is refused.
var rpcKeys = map[string]bool{"jsonrpc": true, "id": true, "method": true, "params": true, "result": true, "error": true}

// inspectRPC reads a POST body: the JSON-RPC method ("response" for an
// answer, "batch" for an array), the id as sent, and why rule N3 forbids it
// ("" when allowed). Only single messages are allowed: the requests
// server/discover, initialize and tools/list with an id, and the
// notification notifications/initialized without one. The body is read
// strictly (one object, no duplicate or unknown members, "jsonrpc":"2.0"),
// so a server's parser cannot see a different method than the guard did.
func inspectRPC(body []byte) (method, id, forbidden string) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(trimmed, &batch); err != nil {
			return "batch", "", notJSONRPC
		}
		for _, m := range batch {
			if mm, _, f := inspectRPC(m); f != "" {
				return "batch", "", "batch with " + f
			} else if mm != "" {
				method = mm
			}
		}
		return "batch", "", "batch of " + method
	}
	fields, err := objectFields(trimmed)
	if err != nil {
		return "", "", notJSONRPC
	}
	for k := range fields {
		if !rpcKeys[k] {
			return "", "", notJSONRPC
		}
	}
	if version, err := jsonString(fields["jsonrpc"]); err != nil || version != "2.0" {
		return "", "", notJSONRPC
	}
	rawID, hasID := fields["id"]
	rawMethod, hasMethod := fields["method"]
	if hasID && string(rawID) == "null" {
		if hasMethod { // a request or notification never has a null id
			return "", "", notJSONRPC
		}
		hasID = false // an error answer to a message the server could not read
	}
	if hasID {
		if id, err = rpcID(rawID); err != nil {
			return "", "", notJSONRPC
		}
	}
	if !hasMethod {
		if _, ok := fields["result"]; ok {
			return "response", id, "response to a server request"
		}
		if _, ok := fields["error"]; ok {
			return "response", id, "response to a server request"
		}
		return "", id, notJSONRPC
	}
	if method, err = jsonString(rawMethod); err != nil {
		return "", id, notJSONRPC
	}
	_, hasResult := fields["result"]
	_, hasError := fields["error"]
	if hasResult || hasError {
		return method, id, notJSONRPC
	}
	if !slices.Contains(data.AllowedRPCMethods, method) {
		if method == "" {
			return method, id, "empty method"
		}
		return method, id, method
	}
	notification := strings.HasPrefix(method, "notifications/")
	switch {
	case notification && hasID:
		return method, id, method + " with an id"
	case !notification && !hasID:
		return method, id, method + " without an id"
	}
	return method, id, ""
}

// objectFields splits exactly one JSON object into its members, refusing
// duplicate members and anything after the object. The body is validated
// by encoding/json first, so the scan below only walks well-formed JSON.
func objectFields(b []byte) (map[string]json.RawMessage, error) {
	if !json.Valid(b) {
		return nil, errors.New("invalid JSON")
	}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, errors.New("not a JSON object")
	}
	fields := make(map[string]json.RawMessage, 4)
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] != '}' {
		end := skipValue(b, i) // the key, a string
		key, err := jsonString(b[i:end])
		if err != nil {
			return nil, err
		}
		if _, dup := fields[key]; dup {
			return nil, fmt.Errorf("duplicate member %q", key)
		}
		i = skipSpace(b, end)
		i = skipSpace(b, i+1) // past ':'
		end = skipValue(b, i)
		fields[key] = json.RawMessage(b[i:end])
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	// json.Valid accepted one value, so nothing but space follows the '}'.
	return fields, nil
}

// skipSpace returns the index of the first non-space byte at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just after the well-formed JSON value that
// starts at i.
func skipValue(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		default:
			if depth == 0 && (c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
				return i // end of a number, true, false or null
			}
		}
	}
	return i
}

// jsonString decodes a JSON string literal, quickly when it has no escapes.
func jsonString(raw []byte) (string, error) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// rpcID renders a request id as sent: a string's content or a number's
// digits. Any other JSON value is not a valid id.
func rpcID(raw json.RawMessage) (string, error) {
	if len(raw) > 0 && raw[0] == '"' {
		return jsonString(raw)
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf("invalid id %s", raw)
}
