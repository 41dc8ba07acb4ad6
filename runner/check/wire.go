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

// What may be read off the sockets of one check (rule N9 at the
// connection): every connection may cost a TLS handshake (a certificate
// message alone may be 64 KB), every request the guard admitted an answer
// of at most 1 MB plus its headers, and as much again for the framing
// around the answer (TLS records, chunk sizes, gzip). Past that the
// connection refuses to read.
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
	Requests     int   // HTTP requests of which a byte was written, retries included
	BytesRead    int64 // bytes read off the sockets: TLS records, headers, framing, answers
	BytesWritten int64 // bytes written to the sockets
}

// errWireBudget is what a connection returns when a check has read all its
// answers may cost off the sockets (rule N9 at the connection).
var errWireBudget = &GuardError{Kind: ErrTooLarge, Rule: "N9", Detail: "answer over 1 MB (bytes off the connection)"}

// errNotResent refuses what net/http would send again by itself: a request
// of which bytes were already written on a connection that then failed.
var errNotResent = &GuardError{Kind: ErrNetwork, Detail: "closed by the server (request not sent again)"}

// wireConn is one TCP connection of a check, below TLS. It counts the bytes
// read and written and the requests whose bytes it wrote, refuses to read
// past the check's allowance and to write once its request is a retry the
// guard did not admit, and removes itself from its guard when closed.
type wireConn struct {
	net.Conn
	g       *Guard
	tls     *tls.Conn               // the conn handed to net/http, once the handshake is done
	pending atomic.Pointer[attempt] // the request net/http gave this conn, until its first byte is written
	refused atomic.Bool             // writes refused: the conn carries a retry
	once    sync.Once
}

// Read reads at most what the check's allowance leaves.
func (c *wireConn) Read(p []byte) (int, error) {
	room := c.g.readRoom()
	if room <= 0 {
		c.Close()
		return 0, errWireBudget
	}
	if int64(len(p)) > room {
		p = p[:room]
	}
	n, err := c.Conn.Read(p)
	c.g.mu.Lock()
	c.g.wire.BytesRead += int64(n)
	c.g.mu.Unlock()
	return n, err
}

// Write writes p unless the conn was refused. It counts before it writes
// (and takes back what did not go out), so the counts are never behind what
// the server may already have received.
func (c *wireConn) Write(p []byte) (int, error) {
	if c.refused.Load() {
		c.Close()
		return 0, errNotResent
	}
	a := c.pending.Swap(nil)
	c.count(a, len(p), +1)
	n, err := c.Conn.Write(p)
	if n == 0 && a != nil {
		c.count(a, 0, -1) // not a byte of the request went out
		c.pending.CompareAndSwap(nil, a)
	}
	c.count(nil, n-len(p), 0)
	return n, err
}

// count adds bytes written to the check's counts, and req (+1 or -1) to its
// requests written when a is the attempt being written.
func (c *wireConn) count(a *attempt, bytes, req int) {
	if a != nil {
		a.written.Store(req > 0)
	}
	c.g.mu.Lock()
	c.g.wire.BytesWritten += int64(bytes)
	if a != nil {
		c.g.wire.Requests += req
	}
	c.g.mu.Unlock()
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

// readRoom is what may still be read off the check's sockets.
func (g *Guard) readRoom() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return int64(g.wire.Dials)*wireConnAllowance + int64(g.requests)*wireAnswerAllowance - g.wire.BytesRead
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

// dialTLS is the transport's DialTLSContext: a connection from dial, then
// the TLS handshake (rule N7), offering HTTP/1.1 only (see the README: the
// HTTP/2 client resends and reads below any wrapper). It refuses a dial
// for a request already written once.
func (g *Guard) dialTLS(ctx context.Context, network, addr string) (net.Conn, error) {
	if a := attemptOf(ctx); a != nil && a.written.Load() {
		return nil, errNotResent
	}
	c, err := g.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	wc := c.(*wireConn)
	host, _, _ := net.SplitHostPort(addr)
	cfg := g.tlsConfig.Clone()
	cfg.ServerName = host
	cfg.NextProtos = []string{"http/1.1"}
	tc := tls.Client(wc, cfg)
	hctx, cancel := context.WithTimeout(ctx, tlsHandshakeTimeout)
	defer cancel()
	stop := context.AfterFunc(g.ctx, cancel)
	defer stop()
	hs := g.now()
	err = tc.HandshakeContext(hctx)
	g.addPhase(&g.timing.TLS, hs)
	g.noteTLS(tc, err)
	if err != nil {
		wc.Close()
		if gerr := g.ended(); gerr != nil {
			return nil, gerr
		}
		return nil, fmt.Errorf("tls handshake with %s: %w", addr, err)
	}
	g.mu.Lock()
	g.wire.Handshakes++
	wc.tls = tc
	g.mu.Unlock()
	return tc, nil
}

// attempt follows one admitted request through net/http: every connection
// the transport gives it (a second one is a retry of its own) and whether
// bytes of it were written.
type attempt struct {
	g       *Guard
	written atomic.Bool // a byte of the request reached a connection
}

type attemptKey struct{}

// attemptOf returns the attempt a request's context (or a dial's, which
// keeps its values) carries, or nil.
func attemptOf(ctx context.Context) *attempt {
	a, _ := ctx.Value(attemptKey{}).(*attempt)
	return a
}

// withAttempt returns ctx carrying a new attempt and the trace that feeds it.
func (g *Guard) withAttempt(ctx context.Context) context.Context {
	a := &attempt{g: g}
	ctx = context.WithValue(ctx, attemptKey{}, a)
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: a.gotConn})
}

// gotConn is called by net/http for every try of the request, before it
// writes: a connection for a request already written is a retry the guard
// did not admit, and that connection refuses to write. Otherwise the
// connection counts the request at its first byte.
func (a *attempt) gotConn(info httptrace.GotConnInfo) {
	wc := a.g.wireConnOf(info.Conn)
	if wc == nil {
		return
	}
	if a.written.Load() {
		wc.refused.Store(true)
		return
	}
	wc.pending.Store(a)
}

// wireConnOf finds the connection net/http holds as c.
func (g *Guard) wireConnOf(c net.Conn) *wireConn {
	g.mu.Lock()
	defer g.mu.Unlock()
	for wc := range g.conns {
		if wc.tls == c {
			return wc
		}
	}
	return nil
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
