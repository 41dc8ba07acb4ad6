package check

import (
	"bytes"
	"context"
	"crypto/tls"
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
	// Resolver looks up the addresses of host, IPv4 and IPv6 (only public
	// IPv4 ones are dialled, rule N6: an IPv4-mapped IPv6 address is IPv6;
	// a name with only IPv6 ones is not checkable, not "not found"); nil
	// means LookupIP(net.DefaultResolver). A name without addresses
	// (NXDOMAIN, or no A and no AAAA record) should be a *net.DNSError
	// with IsNotFound.
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
	tlsConfig *tls.Config // cloned for every handshake (dialTLS)
	transport *http.Transport
	client    *http.Client

	ctx      context.Context // canceled by Close: ends lookups and dials in flight
	cancel   context.CancelFunc
	timer    *time.Timer // rule N10
	deadline time.Time   // when timer fires, on its clock: dialTLS shares what is left

	mu    sync.Mutex
	ex    []*Exchange
	conns map[*wireConn]struct{} // open connections
	wire  WireCounts
	// addresses that failed to connect in this check, tried last
	unreachable map[netip.Addr]bool
	requests    int // requests admitted
	refusal     int
	closed      bool
	expired     bool // closed by the N10 timer
	// HTTP/1.1 answers to POSTs still being read, and a channel closed when
	// the last one ends: see awaitAnswers.
	open     int
	openDone chan struct{}
	// The check's host (data.HostOf of its first request, see otherHost),
	// and the connections its requests went out on (traceConn).
	host    string
	connLog connLog
	// What the check saw on its way: where its time went, and
	// the first certificate a server presented (noteTLS).
	timing data.Timings
	tls    *data.TLSInfo
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
// be read, or SourceAddr is not IPv4 or not an address of this machine.
func NewGuard(cfg GuardConfig) (*Guard, error) {
	if err := cfg.Lab.Validate(); err != nil {
		return nil, fmt.Errorf("new guard: %w", err)
	}
	if cfg.SourceAddr.IsValid() && !cfg.SourceAddr.Unmap().Is4() {
		return nil, fmt.Errorf("new guard: source address %s is not IPv4", cfg.SourceAddr)
	}
	cfg.SourceAddr = cfg.SourceAddr.Unmap()
	if err := bindSource(cfg.SourceAddr); err != nil {
		return nil, fmt.Errorf("new guard: %w", err)
	}
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
	g := &Guard{cfg: cfg, conns: make(map[*wireConn]struct{}), unreachable: make(map[netip.Addr]bool)}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	g.tlsConfig = &tls.Config{
		RootCAs:    roots,
		MinVersion: tls.VersionTLS12,
		Time:       g.now, // rule N7 on the injected clock: a simulated day verifies as that day
		// Rule N5: never a client certificate, even when asked.
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &tls.Certificate{}, nil
		},
	}
	g.transport = g.newTransport()
	g.client = &http.Client{
		Transport:     g,
		CheckRedirect: g.checkRedirect,
		Jar:           nil, // rule N5: no cookie jar
	}
	g.deadline = time.Now().Add(cfg.Timeout) // the timer's clock, not cfg.Now: contexts and timers run on it
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
	conns := make([]*wireConn, 0, len(g.conns))
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
	r := Record{Conns: g.wire.Conns, Requests: g.wire.Requests, Refusal: g.refusal, Wire: g.wire}
	r.Exchanges = make([]Exchange, len(g.ex))
	for i, ex := range g.ex {
		e := *ex
		e.Header = ex.Header.Clone()
		e.BodyHead = slices.Clone(ex.BodyHead)
		r.Exchanges[i] = e
		r.BytesRead += ex.Bytes
	}
	r.ConnInfos = slices.Clone(g.connLog.infos)
	r.Timings, r.TLS = g.timings(), clonePtr(g.tls)
	return r
}

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
		g.append(refused(ex, gerr))
		return nil, gerr
	}

	actx, a := g.withAttempt(req.Context())
	out := req.Clone(actx)
	out.Header = scrubHeader(req.Header, g.cfg.UserAgent)
	out.Trailer = nil // trailers are headers too (rule N5): none is sent
	out.Host = ""     // the Host header is the URL's host, the one CheckTarget and the dialer checked
	if len(body) > 0 {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.ContentLength = int64(len(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	} else {
		out.Body, out.ContentLength, out.GetBody = nil, 0, nil
	}
	out = out.WithContext(g.traceConn(out.Context(), ex))
	g.awaitAnswers(req.Context())
	if gerr := g.countRequest(ex); gerr != nil {
		return nil, gerr
	}

	resp, err := g.transport.RoundTrip(out)
	if err != nil && a.resendable() && g.ended() == nil && req.Context().Err() == nil {
		// No byte of an answer came on the kept-alive connection: it was
		// closed before or as the request arrived (net/http gives up on a
		// POST there).
		resp, err = g.transport.RoundTrip(resent(out, body))
	}
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

// refused records in ex that the guard did not send it, and why.
func refused(ex *Exchange, gerr *GuardError) *Exchange {
	ex.Blocked = strings.TrimPrefix(gerr.Rule+": ", ": ") + gerr.Detail
	ex.ErrKind, ex.Detail, ex.Err = gerr.Kind, gerr.Detail, gerr.Error()
	return ex
}

// countRequest admits ex as one of the check's maxRequestsPerCheck
// requests and records it, or records and returns the refusal once the
// check has sent them all.
func (g *Guard) countRequest(ex *Exchange) *GuardError {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.requests >= maxRequestsPerCheck {
		gerr := &GuardError{Kind: ErrRequestCap, Rule: "S3", Detail: fmt.Sprintf("more than %d requests needed", maxRequestsPerCheck)}
		g.ex = append(g.ex, refused(ex, gerr))
		return gerr
	}
	g.requests++
	g.ex = append(g.ex, ex)
	return nil
}

// resent returns out once more, with its body from the start.
func resent(out *http.Request, body []byte) *http.Request {
	r := out.Clone(out.Context())
	if len(body) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	return r
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
		return &GuardError{Kind: ErrTargetNotAllowed, Rule: te.Rule, Detail: te.Detail, Err: err}
	}
	if g.otherHost(req.URL) {
		return &GuardError{Kind: ErrTargetNotAllowed, Rule: "S3", Detail: data.DetailOtherHost}
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
