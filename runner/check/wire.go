package check

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"plug.directory/prober/data"
)

// maxConnsPerCheck bounds the TCP connections one check may open (connects
// attempted, refused ones included): one for the check's requests, one more
// for the posts of a legacy HTTP+SSE server while its GET holds the first,
// one per redirect hop to another origin (N8: at most 3), and one spare for
// a server that closed a kept-alive connection. A check that needs more is
// refused the next dial; nothing a server does can make it dial more.
const maxConnsPerCheck = 6

// maxRequestsPerCheck bounds the requests one check may send, redirect
// hops included: what the longest honest flow needs, a first check of a
// legacy HTTP+SSE server (server/discover, initialize on the URL, the GET,
// initialize and notifications/initialized on the endpoint) reading
// maxToolPages of tools, and one spare (the fresh retry of a discover
// answer that was not JSON-RPC, or the second send of a request that a
// kept-alive connection closed under it left unanswered). A server that
// redirects every request to itself gets its check cut here, not 60
// requests (rule S3 counts checks, the wire counts requests).
const maxRequestsPerCheck = 5 + maxToolPages + 1

// What may be read off the sockets (rule N9 at the connection): a TLS
// handshake per connection (a certificate message alone may be 64 KB), and
// per request an answer of at most 1 MB plus its headers, and as much again
// for the framing around the answer (TLS records, chunk sizes, gzip). Each
// exchange has its own allowance, from its request's first byte until the
// next request on the connection: what one answer leaves unused is not
// another's (a same-host redirect's small answer does not let the final
// one read 20 MB of framing). The check's total is bounded too. Past
// either the connection refuses to read.
const (
	wireConnAllowance   = 128 << 10
	wireAnswerAllowance = 2*data.MaxAnswerBytes + maxHeaderBytes
)

// tlsHandshakeTimeout bounds one TLS handshake, as net/http's default does.
const tlsHandshakeTimeout = 10 * time.Second

// WireCounts is what one check really put on the wire, counted at the
// connection, below net/http: whatever the transport does by itself
// (retries, reads after a stream was closed) is counted here.
type WireCounts struct {
	Dials        int   // TCP connects attempted, refused ones included
	Conns        int   // TCP connections established
	Handshakes   int   // TLS handshakes completed
	Requests     int   // HTTP requests of which a byte (a whole TLS record) was written, resends included
	BytesRead    int64 // bytes read off the sockets: TLS records, headers, framing, answers
	BytesWritten int64 // bytes written to the sockets
}

// errWireBudget and errHandshakeBudget are what a connection returns when an
// answer, or a TLS handshake, has read all it may cost off the socket
// (rule N9 at the connection).
var (
	errWireBudget      = &GuardError{Kind: ErrTooLarge, Rule: "N9", Detail: "answer over 2 MB on the wire (framing included)"}
	errHandshakeBudget = &GuardError{Kind: ErrTooLarge, Rule: "N9", Detail: "TLS handshake over 128 KB"}
)

// errNotResent refuses what net/http would send again by itself beyond
// what attempt allows: a request that got a byte of an answer, or none on a
// fresh connection, or that went once more already.
var errNotResent = &GuardError{Kind: ErrNetwork, Detail: "closed by the server (request not sent again)"}

// wireConn is one TCP connection of a check, below TLS. It counts the bytes
// read and written, TLS's own records included, refuses to read past its
// handshake's, then its current exchange's allowance and the check's, and
// removes itself from its guard when closed.
type wireConn struct {
	net.Conn
	g         *Guard
	room      atomic.Int64 // what the handshake, then the current exchange, may still read
	answering atomic.Bool  // a request was written: room is an exchange's
	once      sync.Once
}

// newWireConn wraps c for g, with the allowance of a TLS handshake.
func newWireConn(g *Guard, c net.Conn) *wireConn {
	wc := &wireConn{Conn: c, g: g}
	wc.room.Store(wireConnAllowance)
	return wc
}

// startExchange gives the request just written its own allowance.
func (c *wireConn) startExchange() {
	c.answering.Store(true)
	c.room.Store(wireAnswerAllowance)
}

// Read reads at most what the exchange's and the check's allowances leave.
func (c *wireConn) Read(p []byte) (int, error) {
	room := min(c.room.Load(), c.g.readRoom())
	if room <= 0 {
		c.Close()
		if !c.answering.Load() {
			return 0, errHandshakeBudget
		}
		return 0, errWireBudget
	}
	if int64(len(p)) > room {
		p = p[:room]
	}
	n, err := c.Conn.Read(p)
	c.room.Add(-int64(n))
	c.g.mu.Lock()
	c.g.wire.BytesRead += int64(n)
	c.g.mu.Unlock()
	return n, err
}

// Write counts before it writes (and takes back what did not go out), so
// the counts are never behind what the server may already have received.
func (c *wireConn) Write(p []byte) (int, error) {
	c.g.countWritten(len(p))
	n, err := c.Conn.Write(p)
	c.g.countWritten(n - len(p))
	return n, err
}

// Close closes the connection once and forgets it.
func (c *wireConn) Close() error {
	err := net.ErrClosed
	c.once.Do(func() {
		err = c.Conn.Close()
		c.g.mu.Lock()
		delete(c.g.conns, c)
		c.g.mu.Unlock()
	})
	return err
}

// countWritten adds n bytes written (or taken back) to the check's counts.
func (g *Guard) countWritten(n int) {
	g.mu.Lock()
	g.wire.BytesWritten += int64(n)
	g.mu.Unlock()
}

// reqConn is a connection as net/http holds it: the TLS session above a
// wireConn. Over HTTP/1.1 net/http writes nothing to it but requests, and
// TLS writes its own records (the close_notify of Close, key updates)
// below it, so this is where a request starts: it counts one at the first
// write after net/http handed it the connection, and only when that write
// put a whole TLS record on the socket (tls.Conn.Write counts no partial
// record; a partial one the server cannot decrypt). A try the guard does
// not admit (see attempt.gotConn) is refused before a byte is written.
// net/http fills Response.TLS only for a *tls.Conn, so it is nil here: the
// session's facts come from the connection (connInfoOf).
type reqConn struct {
	*tls.Conn
	wire    *wireConn
	pending atomic.Pointer[attempt] // the request net/http gave this conn, until a byte of it is written
	current atomic.Pointer[attempt] // the request last written on it: what the conn reads is its answer
	refused atomic.Bool             // writes refused: the conn carries a try the guard did not admit
}

// Write writes p unless the conn was refused, counting the pending request
// before it writes and taking it back when nothing went out. A second send
// of a request takes one more of the check's requests, or is refused when
// none is left.
func (c *reqConn) Write(p []byte) (int, error) {
	if c.refused.Load() {
		c.wire.Close()
		return 0, errNotResent
	}
	a := c.pending.Swap(nil)
	if a != nil {
		if a.sends.Load() > 0 && !a.g.takeRequest() {
			c.wire.Close()
			return 0, errNotResent
		}
		a.wrote(+1)
		c.current.Store(a)
		c.wire.startExchange()
	}
	n, err := c.Conn.Write(p)
	if n == 0 && a != nil {
		a.wrote(-1) // not a byte of the request went out
		c.pending.CompareAndSwap(nil, a)
	}
	return n, err
}

// Read reads the answer to the request last written, noting that a byte
// of it came (then the request is never sent again).
func (c *reqConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		if a := c.current.Load(); a != nil {
			a.answered.Store(true)
		}
	}
	return n, err
}

// readRoom is what may still be read off the check's sockets.
func (g *Guard) readRoom() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return int64(g.wire.Dials)*wireConnAllowance + int64(g.requests)*wireAnswerAllowance - g.wire.BytesRead
}

// takeRequest takes one of the check's maxRequestsPerCheck requests for the
// second send of a request, or reports false when none is left.
func (g *Guard) takeRequest() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.requests >= maxRequestsPerCheck {
		return false
	}
	g.requests++
	return true
}

// requestLeft reports whether the check may still send a request.
func (g *Guard) requestLeft() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.requests < maxRequestsPerCheck
}

// countDial admits one TCP connect, or refuses it when the check has used
// its maxConnsPerCheck.
func (g *Guard) countDial() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.wire.Dials >= maxConnsPerCheck {
		return &GuardError{Kind: ErrNetwork, Detail: fmt.Sprintf("more than %d connections needed", maxConnsPerCheck)}
	}
	g.wire.Dials++
	return nil
}

// attempt follows one admitted request through net/http: every connection
// the transport gives it (a second one is a retry), whether bytes of it were
// written and whether a byte of an answer came. A request that got no byte
// of an answer on a kept-alive connection may go once more, on a fresh
// connection, as curl and Chromium resend it: the server may have closed
// the connection as the request arrived (an idle timeout of a few ms).
// net/http resends it itself when nothing of it was written, or a GET when
// the server closed without answering; the guard does (resendable) where
// net/http gives up (a POST). A request that got a byte of an answer, or
// none on a fresh connection (a server that swallows a POST does not get
// it twice), is never sent again; a second send of a written one is one
// more of the check's requests.
type attempt struct {
	g        *Guard
	sends    atomic.Int32 // sends of which a byte reached a connection
	answered atomic.Bool  // a byte of an answer came on a connection it was written to

	mu     sync.Mutex
	tries  int // connections net/http gave it
	fresh  int // of which new ones (not kept-alive)
	resent bool
}

type attemptKey struct{}

// attemptOf returns the attempt a request's context (or a dial's, which
// keeps its values) carries, or nil.
func attemptOf(ctx context.Context) *attempt {
	a, _ := ctx.Value(attemptKey{}).(*attempt)
	return a
}

// withAttempt returns ctx carrying a new attempt and the trace that feeds it.
func (g *Guard) withAttempt(ctx context.Context) (context.Context, *attempt) {
	a := &attempt{g: g}
	ctx = context.WithValue(ctx, attemptKey{}, a)
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: a.gotConn}), a
}

// written reports whether a byte of the request reached a connection.
func (a *attempt) written() bool { return a.sends.Load() > 0 }

// wrote counts the request as written (+1) or takes that back (-1).
func (a *attempt) wrote(req int) {
	a.sends.Add(int32(req))
	a.g.mu.Lock()
	a.g.wire.Requests += req
	a.g.mu.Unlock()
}

// gotConn is called by net/http for every try of the request, before it
// writes. The first try goes on any connection; a later one only on a fresh
// connection, once, while the request may go again (a kept-alive one may be
// as dead as the one that just failed). A try not admitted finds its
// connection refusing to write; an admitted one's connection counts the
// request at its first byte.
func (a *attempt) gotConn(info httptrace.GotConnInfo) {
	rc, ok := info.Conn.(*reqConn)
	if !ok {
		return
	}
	a.mu.Lock()
	a.tries++
	admit := a.tries == 1 || !info.Reused && a.again()
	if !info.Reused {
		a.fresh++
	}
	a.mu.Unlock()
	if !admit {
		rc.refused.Store(true)
		return
	}
	rc.pending.Store(a)
}

// again reports whether the request may go once more after its tries
// failed: every try was on a kept-alive connection (so none went on a fresh
// one yet), no byte of an answer came, and when a byte of it was written,
// the check has a request left for the second send. Callers hold a.mu.
func (a *attempt) again() bool {
	return a.fresh == 0 && !a.answered.Load() && (!a.written() || a.g.requestLeft())
}

// mayDial reports whether a connection may be dialled for the request: for
// its first send, or for the one more it may go.
func (a *attempt) mayDial() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.written() || a.again()
}

// resendable reports whether the guard may send the request once more
// after net/http gave up on it: it may go again and was not resent before.
// It marks the resend.
func (a *attempt) resendable() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tries == 0 || a.resent || !a.again() {
		return false
	}
	a.resent = true
	return true
}

// newTransport returns the check's HTTP/1.1 transport: every connection
// through dialTLS, no proxy, the header limit of rule N9.
func (g *Guard) newTransport() *http.Transport {
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	return &http.Transport{
		Proxy:          nil, // never a proxy from the environment: the dial check must see the real target
		DialTLSContext: g.dialTLS,
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			return nil, &GuardError{Kind: ErrTargetNotAllowed, Rule: "N7", Detail: "not https"}
		},
		Protocols: protocols,
		// Headers are part of the answer too (rule N9): net/http's default
		// would read up to 10 MB of them.
		MaxResponseHeaderBytes: maxHeaderBytes,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        data.CheckTimeout,
		// DisableCompression stays false: the transport asks for gzip and
		// decompresses before answerBody counts (rule N9 counts after
		// decompression).
	}
}
