package check

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"plug.directory/prober/internal/testutil"
)

// hostileMode is how a hostile server answers every request, over HTTP/2
// when the client offers it and in the closest HTTP/1.1 manner otherwise.
type hostileMode int

const (
	resetProtocol  hostileMode = iota // h2: RST_STREAM PROTOCOL_ERROR; h1: close without an answer
	goAwayEach                        // h2: GOAWAY (last stream 0) and close; h1: close without an answer
	refuseStream                      // h2: RST_STREAM REFUSED_STREAM; h1: close without an answer
	dataAfterReset                    // the answer as an event stream, then padding forever, also after the client's RST_STREAM
	idleClose                         // h1: plain keep-alive answers, then the connection closed after 0-3 ms idle
)

// hostileServer is a raw TLS server on a loopback :8443 that speaks HTTP/2
// with its own framer (and HTTP/1.1 by hand) and counts what it received
// and wrote, at the socket.
type hostileServer struct {
	mode hostileMode
	ln   net.Listener
	tls  *tls.Config
	Lab  Lab
	URL  string

	conns      atomic.Int64  // TCP connections accepted
	handshakes atomic.Int64  // TLS handshakes completed
	h2conns    atomic.Int64  // connections that negotiated h2
	headers    atomic.Int64  // HTTP/2 HEADERS frames received (one per request written)
	h1requests atomic.Int64  // HTTP/1.1 requests received
	rsts       atomic.Int64  // RST_STREAM frames received from the client
	written    atomic.Int64  // bytes written to the socket, TLS included
	read       atomic.Int64  // bytes read off the socket, TLS included
	late       atomic.Int64  // idleClose: requests of which a byte arrived after the server closed
	closeNow   chan struct{} // idleClose: if set, the idle timeout ends when the test sends on it (or after 200 ms)
	ended      atomic.Int64  // connections the server is done with

	wg sync.WaitGroup
}

// startHostileServer starts a hostile server for mcp.test, changed by opts
// before it starts; it stops when the test ends.
func startHostileServer(tb testing.TB, mode hostileMode, opts ...func(*hostileServer)) *hostileServer {
	tb.Helper()
	ca := testutil.MustCA(tb)
	cert := ca.MustLeaf(tb, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), "mcp.test")
	ln := testutil.ListenLoopback8443(tb)
	s := &hostileServer{
		mode: mode,
		ln:   ln,
		tls:  &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}},
		URL:  "https://mcp.test:8443/mcp",
	}
	addr := ln.Addr().(*net.TCPAddr).IP.String()
	s.Lab = Lab{Enabled: true, Resolve: map[string]string{"mcp.test:8443": addr}, CAFile: ca.File}
	for _, o := range opts {
		o(s)
	}
	s.wg.Add(1)
	go s.accept()
	tb.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *hostileServer) accept() {
	defer s.wg.Done()
	var conns []net.Conn
	var mu sync.Mutex
	defer func() {
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	for {
		raw, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.conns.Add(1)
		c := &countedConn{Conn: raw, read: &s.read, written: &s.written}
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.ended.Add(1)
			defer c.Close()
			tc := tls.Server(c, s.tls)
			tc.SetDeadline(time.Now().Add(30 * time.Second))
			if err := tc.Handshake(); err != nil {
				return
			}
			s.handshakes.Add(1)
			if tc.ConnectionState().NegotiatedProtocol == "h2" {
				s.h2conns.Add(1)
				s.serveH2(tc)
				return
			}
			s.serveH1(tc)
		}()
	}
}

// countedConn counts the bytes a server's socket read and wrote.
type countedConn struct {
	net.Conn
	read, written *atomic.Int64
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// Write counts before it writes, so the count is never behind what the
// peer may already have read.
func (c *countedConn) Write(p []byte) (int, error) {
	c.written.Add(int64(len(p)))
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n - len(p)))
	return n, err
}

// answerTo is the hostile server's JSON-RPC answer to body (nil for a
// notification): a plain MCP server's, so that only the transport is hostile.
func answerTo(body []byte) []byte {
	var m rpcRequest
	if json.Unmarshal(body, &m) != nil || m.ID == nil {
		return nil
	}
	switch m.Method {
	case "initialize":
		return rpcResponse(m.ID, initResult("2025-11-25"), nil)
	case "tools/list":
		return rpcResponse(m.ID, map[string]any{"tools": toolList("alpha")}, nil)
	}
	return rpcResponse(m.ID, nil, map[string]any{"code": -32601, "message": "Method not found"})
}

// padding is one SSE comment line the endless answers repeat.
var padding = []byte(":" + strings.Repeat("x", 16<<10-2) + "\n")

// serveH2 speaks HTTP/2 with a raw framer.
func (s *hostileServer) serveH2(c net.Conn) {
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c, preface); err != nil {
		return
	}
	fr := http2.NewFramer(c, c)
	var wmu sync.Mutex // one writer at a time: the reader and the streams' padders
	write := func(f func() error) error {
		wmu.Lock()
		defer wmu.Unlock()
		return f()
	}
	if write(func() error { return fr.WriteSettings() }) != nil {
		return
	}
	done := make(chan struct{})
	defer close(done)
	bodies := map[uint32]*bytes.Buffer{}
	answer := func(id uint32, body []byte) {
		switch s.mode {
		case resetProtocol:
			write(func() error { return fr.WriteRSTStream(id, http2.ErrCodeProtocol) })
		case refuseStream:
			write(func() error { return fr.WriteRSTStream(id, http2.ErrCodeRefusedStream) })
		case goAwayEach:
			write(func() error { return fr.WriteGoAway(0, http2.ErrCodeNo, nil) })
			c.Close()
		case dataAfterReset:
			msg := answerTo(body)
			status := "200"
			if msg == nil {
				status = "202"
			}
			var hb bytes.Buffer
			enc := hpack.NewEncoder(&hb)
			enc.WriteField(hpack.HeaderField{Name: ":status", Value: status})
			enc.WriteField(hpack.HeaderField{Name: "content-type", Value: "text/event-stream"})
			if write(func() error {
				return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true, EndStream: msg == nil})
			}) != nil || msg == nil {
				return
			}
			event := fmt.Appendf(nil, "event: message\r\ndata: %s\r\n\r\n", msg)
			write(func() error { return fr.WriteData(id, false, event) })
			go func() { // the stream never ends, whatever the client says
				for {
					select {
					case <-done:
						return
					default:
					}
					if write(func() error { return fr.WriteData(id, false, padding) }) != nil {
						return
					}
				}
			}()
		}
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				write(func() error { return fr.WriteSettingsAck() })
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				write(func() error { return fr.WritePing(true, f.Data) })
			}
		case *http2.RSTStreamFrame:
			s.rsts.Add(1)
		case *http2.HeadersFrame:
			s.headers.Add(1)
			bodies[f.StreamID] = &bytes.Buffer{}
			if f.StreamEnded() {
				answer(f.StreamID, nil)
			}
		case *http2.DataFrame:
			if b := bodies[f.StreamID]; b != nil {
				b.Write(f.Data())
				if f.StreamEnded() {
					answer(f.StreamID, b.Bytes())
				}
			}
		}
	}
}

// serveH1 reads HTTP/1.1 requests by hand; a server refusing over HTTP/2
// closes the connection without an answer here.
func (s *hostileServer) serveH1(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(req.Body)
		s.h1requests.Add(1)
		switch s.mode {
		case idleClose:
			if !s.answerThenIdle(c.(*tls.Conn), br, answerTo(body)) {
				return
			}
			continue
		case dataAfterReset:
		default:
			return
		}
		msg := answerTo(body)
		if msg == nil {
			if _, err := io.WriteString(c, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"); err != nil {
				return
			}
			continue
		}
		if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\nevent: message\r\ndata: %s\r\n\r\n", msg); err != nil {
			return
		}
		for {
			if _, err := c.Write(padding); err != nil {
				return
			}
		}
	}
}

// answerThenIdle answers msg (nil: 202) as a plain keep-alive server whose
// idle timeout is 0-3 ms (as behind some proxies and serverless
// platforms): after the answer it waits that long for the next request's
// first byte and reports true when it came. Otherwise it closes its side
// (close_notify and FIN) and goes on reading until the client closes, so a
// request the client wrote after the close is counted (late), not lost:
// the server could have received it.
func (s *hostileServer) answerThenIdle(c *tls.Conn, br *bufio.Reader, msg []byte) bool {
	var err error
	if msg == nil {
		_, err = io.WriteString(c, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
	} else {
		_, err = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(msg), msg)
	}
	if err != nil {
		return false
	}
	if s.closeNow != nil {
		select {
		case <-s.closeNow:
		case <-time.After(200 * time.Millisecond):
		}
	} else {
		c.SetReadDeadline(time.Now().Add(time.Duration(rand.Int64N(int64(3*time.Millisecond) + 1))))
		_, err = br.Peek(1)
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if err == nil {
			return true // the next request came within the idle timeout
		}
	}
	c.CloseWrite()
	if tcp, ok := c.NetConn().(*countedConn).Conn.(*net.TCPConn); ok {
		tcp.CloseWrite()
	}
	if n, _ := io.Copy(io.Discard, br); n > 0 {
		s.late.Add(1) // HTTP/1.1 without pipelining: one request at most
	}
	return false
}

// quiet waits until the server accepted conns connections in all and is
// done with every one, so its counts are final.
func (s *hostileServer) quiet(tb testing.TB, conns int64) {
	tb.Helper()
	for deadline := time.Now().Add(5 * time.Second); s.conns.Load() < conns || s.ended.Load() < s.conns.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("server still has %d connections open", s.conns.Load()-s.ended.Load())
		}
	}
}

// wireCounts is what a hostile server saw, for test logs and reports.
func (s *hostileServer) wireCounts() string {
	return fmt.Sprintf("conns %d, TLS handshakes %d (h2 %d), HEADERS frames %d, HTTP/1.1 requests %d, client RST_STREAM %d, server wrote %d B, read %d B",
		s.conns.Load(), s.handshakes.Load(), s.h2conns.Load(), s.headers.Load(), s.h1requests.Load(), s.rsts.Load(), s.written.Load(), s.read.Load())
}
