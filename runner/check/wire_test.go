package check

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"plug.directory/prober/data"
)

// TestWireHostileHTTP2 proves the wire's bounds against a raw HTTP/2
// server that resets every stream with PROTOCOL_ERROR, sends GOAWAY after
// each request, refuses every stream, or keeps sending DATA after the
// client's RST_STREAM (and the closest HTTP/1.1 behaviour to a client that
// offers only HTTP/1.1): the server receives each request at most once,
// over at most maxConnsPerCheck connections, the bytes read off the socket
// stay within the allowance, and the check's record counts what the
// server saw.
func TestWireHostileHTTP2(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		mode     hostileMode
		requests int64 // requests the server may receive, at most
		conns    int64
		verdicts []string // "status: detail"
	}{
		{"S3_h2_reset_protocol_error_not_replayed", resetProtocol, 1, 1, []string{"failing: connection failed: closed by the server"}},
		{"S3_h2_goaway_after_each_request_not_replayed", goAwayEach, 1, 1, []string{"failing: connection failed: closed by the server"}},
		{"S3_h2_refused_stream_not_replayed", refuseStream, 1, 1, []string{"failing: connection failed: closed by the server"}},
		// Whether the SDK reads a stream's answer before the stream's
		// 1 MB cut decides between the two; the wire is bounded either way.
		{"N9_h2_data_after_reset_not_read", dataAfterReset, 4, 4, []string{"working: 1 tool", "failing: answer over 1 MB"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startHostileServer(t, tc.mode)
			c := newTestChecker(t, s.Lab, 3*time.Second)
			res, rec := c.Check(context.Background(), Target{ID: "h", URL: s.URL})
			// The server's goroutines end with its connections: read its
			// counts once the check closed them.
			s.ln.Close()
			s.wg.Wait()
			t.Logf("%s %q; record %+v; server: %s", res.Status, res.Detail, rec.Wire, s.wireCounts())
			if v := string(res.Status) + ": " + res.Detail; !slices.Contains(tc.verdicts, v) {
				t.Errorf("concluded %q, want one of %q; transcript:\n%s", v, tc.verdicts, transcriptText(rec))
			}
			if s.h2conns.Load() != 0 || s.headers.Load() != 0 {
				t.Errorf("server negotiated h2 on %d connections, got %d HEADERS frames: the guard speaks HTTP/1.1 only", s.h2conns.Load(), s.headers.Load())
			}
			if got := s.h1requests.Load(); got > tc.requests || int64(rec.Requests) != got || int64(rec.Wire.Requests) != got {
				t.Errorf("server received %d requests, record says %d (wire %d); want the same, at most %d", got, rec.Requests, rec.Wire.Requests, tc.requests)
			}
			if got := s.conns.Load(); got > tc.conns || int64(rec.Wire.Conns) != got || int64(rec.Wire.Handshakes) != s.handshakes.Load() {
				t.Errorf("server accepted %d connections (%d TLS handshakes), record says %d (%d); want the same, at most %d",
					got, s.handshakes.Load(), rec.Wire.Conns, rec.Wire.Handshakes, tc.conns)
			}
			if limit := int64(rec.Wire.Dials)*wireConnAllowance + int64(len(rec.Exchanges))*wireAnswerAllowance; rec.Wire.BytesRead > limit || rec.Wire.BytesRead > s.written.Load() {
				t.Errorf("read %d B off the sockets; want at most the allowance %d and what the server wrote (%d)", rec.Wire.BytesRead, limit, s.written.Load())
			}
			if rec.Wire.BytesWritten < s.read.Load() {
				t.Errorf("wrote %d B, server read %d", rec.Wire.BytesWritten, s.read.Load())
			}
		})
	}
}

// TestWireNotResent proves that net/http's own retries of a request already
// written (a GET on a kept-alive connection the server closes as it reads
// it, without a byte of an answer) reach the wire once, on a fresh
// connection, whether the first retry would dial or take another idle
// connection (refused: it may be as dead), and never again once the fresh
// connection failed too: the server receives the GET twice.
func TestWireNotResent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		posts int // POSTs in flight at once before the GET: the idle connections it finds
	}{
		{"S3_GET_retry_on_a_new_connection_once", 1},
		{"S3_GET_retry_on_an_idle_connection_refused_then_once_on_a_new_one", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var posts, gets atomic.Int64
			arrived := make(chan struct{}, tc.posts)
			all := make(chan struct{})
			srv, _, g := guardedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					if posts.Add(1) == int64(tc.posts) {
						close(all)
					}
					arrived <- struct{}{}
					<-all // answer once all are in flight, each on a connection of its own
					w.WriteHeader(http.StatusMethodNotAllowed)
					return
				}
				gets.Add(1)
				c, _, err := w.(http.Hijacker).Hijack()
				if err != nil {
					t.Errorf("hijack: %v", err)
					return
				}
				c.Close()
			}), nil)
			var wg sync.WaitGroup
			for range tc.posts {
				wg.Go(func() {
					if _, err := do(t, g, http.MethodPost, srv.URL+"/sse", initializeBody, nil); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			_, err := do(t, g, http.MethodGet, srv.URL+"/sse", "", nil)
			rec := g.Record()
			ex := rec.Exchanges[len(rec.Exchanges)-1]
			if err == nil || ex.ErrKind != ErrNetwork {
				t.Errorf("GET: err %v, recorded %v %q; want a network failure", err, ex.ErrKind, ex.Detail)
			}
			if posts.Load() != int64(tc.posts) || gets.Load() != 2 {
				t.Errorf("server received %d POST, %d GET; want %d, 2", posts.Load(), gets.Load(), tc.posts)
			}
			if rec.Requests != tc.posts+2 || rec.Wire.Dials != tc.posts+1 || rec.Conns != tc.posts+1 {
				t.Errorf("record: requests %d, dials %d, conns %d; want %d, %d, %d", rec.Requests, rec.Wire.Dials, rec.Conns, tc.posts+2, tc.posts+1, tc.posts+1)
			}
		})
	}
}

// TestWireConnCap proves the fixed bound on connections per check: a
// server that closes every connection after one answer gets
// maxConnsPerCheck of them, and the next request is refused before a
// connect.
func TestWireConnCap(t *testing.T) {
	rc := &recorder{next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		writeResult(w, []byte("1"), initResult("2025-11-25"))
	})}
	cl := &countingListener{}
	srv := startLabServer(t, rc, labServerConfig{Wrap: cl.wrap})
	g := newTestGuard(t, GuardConfig{Lab: srv.Lab, DialContext: onlyDial(t, srv)})
	conns := &cl.conns
	t.Run(fmt.Sprintf("S3_at_most_%d_connections_per_check", maxConnsPerCheck), func(t *testing.T) {
		for i := range maxConnsPerCheck + 2 {
			_, err := do(t, g, http.MethodPost, srv.URL+"/mcp", initializeBody, nil)
			if (i < maxConnsPerCheck) != (err == nil) {
				t.Errorf("request %d: err %v", i+1, err)
			}
		}
		rec := g.Record()
		if got := conns.Load(); got != maxConnsPerCheck || rec.Wire.Dials != maxConnsPerCheck || rec.Conns != maxConnsPerCheck {
			t.Errorf("server accepted %d connections, record: dials %d conns %d; want %d", got, rec.Wire.Dials, rec.Conns, maxConnsPerCheck)
		}
		if n := len(rc.seen()); n != maxConnsPerCheck || rec.Requests != n {
			t.Errorf("server received %d requests, record says %d; want %d", n, rec.Requests, maxConnsPerCheck)
		}
		if ex := rec.Exchanges[len(rec.Exchanges)-1]; ex.ErrKind != ErrNetwork || !strings.Contains(ex.Detail, "connections") {
			t.Errorf("last exchange %v %q; want the connection cap", ex.ErrKind, ex.Detail)
		}
	})
}

// TestWireByteAllowance proves rule N9 at the connection: an answer of
// 1 MB framed in one-byte chunks (six times its size on the wire) is cut
// once the check's allowance is read off the socket.
func TestWireByteAllowance(t *testing.T) {
	t.Parallel()
	var wrote atomic.Int64
	srv, _, g := guardedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer c.Close()
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
		chunk := []byte(strings.Repeat("1\r\nx\r\n", 1<<10))
		for range data.MaxAnswerBytes >> 10 {
			n, err := buf.Write(chunk)
			wrote.Add(int64(n))
			if err != nil {
				return
			}
		}
		buf.WriteString("0\r\n\r\n")
		buf.Flush()
	}), nil)
	t.Run("N9_framing_counted_off_the_socket", func(t *testing.T) {
		_, err := do(t, g, http.MethodPost, srv.URL+"/mcp", initializeBody, nil)
		rec := g.Record()
		ex := rec.Exchanges[0]
		limit := int64(wireConnAllowance + wireAnswerAllowance)
		if err == nil || ex.ErrKind != ErrTooLarge || rec.Wire.BytesRead > limit {
			t.Errorf("err %v, recorded %v %q, %d B off the socket (answer %d B); want too large within %d B", err, ex.ErrKind, ex.Detail, rec.Wire.BytesRead, ex.Bytes, limit)
		}
		t.Logf("server wrote %d B of chunks; %d B read off the socket, %d B of answer", wrote.Load(), rec.Wire.BytesRead, ex.Bytes)
	})
}

// TestWireCountsEqualServer proves that a check's record counts what a
// plain server received: connections, TLS handshakes, requests, bytes.
func TestWireCountsEqualServer(t *testing.T) {
	var handshakes atomic.Int64
	var reqs atomic.Int64
	h := streamableHandler(sdkServer(nil, "a", "b"), true, false)
	cl := &countingListener{}
	srv := startLabServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqs.Add(1)
		h.ServeHTTP(w, r)
	}), labServerConfig{HTTP2: true, TLS: func(c *tls.Config) {
		c.VerifyConnection = func(tls.ConnectionState) error { handshakes.Add(1); return nil }
	}, Wrap: cl.wrap})
	c := newTestChecker(t, srv.Lab, 0)
	t.Run("N10_record_counts_equal_the_wire", func(t *testing.T) {
		res, rec := c.Check(context.Background(), Target{ID: "s", URL: srv.URL + "/mcp"})
		if res.Status != data.Working {
			t.Fatalf("concluded %s %q", res.Status, res.Detail)
		}
		srv.CloseClientConnections()
		if int64(rec.Wire.Conns) != cl.conns.Load() || int64(rec.Wire.Handshakes) != handshakes.Load() || int64(res.Requests) != reqs.Load() {
			t.Errorf("record: conns %d, handshakes %d, requests %d; server: %d, %d, %d",
				rec.Wire.Conns, rec.Wire.Handshakes, res.Requests, cl.conns.Load(), handshakes.Load(), reqs.Load())
		}
		// Only the last TLS alert each side sends as it closes (a
		// close_notify record, 24 B) may be left unread by the other, and
		// of each answer the end of its chunked body ("0\r\n\r\n", one
		// 27 B TLS record), when the server writes it after the SDK had its
		// message and closed the body.
		const closeNotify, lastChunk = 24, 27
		unread := closeNotify*int64(rec.Wire.Conns) + lastChunk*int64(res.Requests)
		if w := cl.written.Load(); rec.Wire.BytesRead > w || rec.Wire.BytesRead < w-unread {
			t.Errorf("read %d B off the socket, server wrote %d (at most %d B may stay unread)", rec.Wire.BytesRead, w, unread)
		}
		if r := cl.read.Load(); rec.Wire.BytesWritten < r || rec.Wire.BytesWritten > r+closeNotify*int64(rec.Wire.Conns) {
			t.Errorf("wrote %d B, server read %d", rec.Wire.BytesWritten, r)
		}
	})
}

// countingListener counts the connections a server accepted and the bytes
// it read and wrote on them, below TLS.
type countingListener struct {
	net.Listener
	conns, read, written atomic.Int64
}

// wrap is a labServerConfig.Wrap.
func (l *countingListener) wrap(ln net.Listener) net.Listener {
	l.Listener = ln
	return l
}

// Accept counts and wraps the next connection.
func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.conns.Add(1)
	return &countedConn{Conn: c, read: &l.read, written: &l.written}, nil
}

// TestTrailers (rule N5): trailers set on a
// request are never sent, also to a server offering HTTP/2 (before, the
// HTTP/2 transport announced them and, the body's length no longer
// matching, replayed the request some 700 times a second).
func TestTrailers(t *testing.T) {
	var mu sync.Mutex
	var requests int
	var trailer []string
	srv := startLabServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		mu.Lock()
		requests++
		for k, v := range r.Trailer {
			trailer = append(trailer, k+": "+strings.Join(v, ","))
		}
		trailer = append(trailer, r.Header.Values("Trailer")...)
		mu.Unlock()
		writeResult(w, []byte("1"), initResult("2025-11-25"))
	}), labServerConfig{HTTP2: true})
	g := newTestGuard(t, GuardConfig{Lab: srv.Lab, DialContext: onlyDial(t, srv)})
	t.Run("N5_no_trailer_sent", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(initializeBody))
		req.Header.Set("Content-Type", "application/json")
		req.Trailer = http.Header{"Authorization": {"Bearer secret"}, "Cookie": {"a=b"}}
		req.ContentLength = -1 // chunked: how HTTP/1.1 carries trailers
		resp, err := g.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		mu.Lock()
		defer mu.Unlock()
		if len(trailer) != 0 || requests != 1 {
			t.Errorf("server received %d requests, trailers %q; want 1, none", requests, trailer)
		}
	})
}

// TestWireIdleClose proves the resend rule at the server: against a server
// that closes each kept-alive connection 0-3 ms after its answer, the
// record counts a request only when the server could have received it (a
// close_notify is not a request, a request that reached the closed
// connection is), a request that got no answer on the closed connection
// goes once more on a fresh one, and every check is working (before:
// failing "connection failed: closed by the server" whenever a request
// reached the closed connection). Many checks, each compared with what the
// server received.
func TestWireIdleClose(t *testing.T) {
	checks := 60
	if testing.Short() {
		checks = 20
	}
	s := startHostileServer(t, idleClose)
	c := newTestChecker(t, s.Lab, 5*time.Second)
	t.Run("S3_idle_close_counts_only_what_the_server_could_receive", func(t *testing.T) {
		working, resent := 0, int64(0)
		for i := range checks {
			before := [...]int64{s.h1requests.Load(), s.late.Load(), s.conns.Load()}
			res, rec := c.Check(context.Background(), Target{ID: "h", URL: s.URL})
			s.quiet(t, before[2]+int64(rec.Wire.Conns))
			served, late, conns := s.h1requests.Load()-before[0], s.late.Load()-before[1], s.conns.Load()-before[2]
			if int64(rec.Requests) != served+late || int64(rec.Wire.Conns) != conns || rec.Wire.Conns > maxConnsPerCheck {
				t.Errorf("check %d: record: %d requests, %d conns; server: %d answered + %d after its close, %d conns; transcript:\n%s",
					i, rec.Requests, rec.Wire.Conns, served, late, conns, transcriptText(rec))
			}
			if res.Status == data.Working {
				working++
			} else {
				t.Errorf("check %d: %s %q; transcript:\n%s", i, res.Status, res.Detail, transcriptText(rec))
			}
			resent += late
		}
		t.Logf("%d of %d checks working; %d requests reached a closed connection and went once more", working, checks, resent)
	})
}

// TestWireResendUnwritten proves the resend rule deterministically: the
// server closes the kept-alive connection just after net/http handed it to
// the next request and before that request's first byte (the test's
// GotConn waits until the client has seen the close). TLS's close_notify
// is not counted as the request, and the request goes once, on a fresh
// connection, POST (which net/http gives up on: the guard resends it) and
// GET (which net/http resends itself) alike. The server receives each
// request once.
func TestWireResendUnwritten(t *testing.T) {
	t.Parallel() // waits out real deadlines: alongside the other waiting tests
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		t.Run("S3_"+method+"_never_written_goes_once_on_a_fresh_connection", func(t *testing.T) {
			s := startHostileServer(t, idleClose, func(s *hostileServer) { s.closeNow = make(chan struct{}, 1) })
			g := newTestGuard(t, GuardConfig{Lab: s.Lab})
			if _, err := do(t, g, http.MethodPost, s.URL, initializeBody, nil); err != nil {
				t.Fatal(err)
			}
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
				if info.Reused {
					s.closeNow <- struct{}{}
					time.Sleep(50 * time.Millisecond) // the client reads the close and closes its side
				}
			}})
			var body io.Reader
			if method == http.MethodPost {
				body = strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
			}
			req, _ := http.NewRequestWithContext(ctx, method, s.URL, body)
			resp, err := g.Client().Do(req)
			if err != nil {
				t.Fatalf("%s: %v; transcript:\n%s", method, err, transcriptText(g.Record()))
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			g.Close()
			// The fresh connection's idle wait ends now rather than after
			// 200 ms, so the server's counts are final sooner.
			select {
			case s.closeNow <- struct{}{}:
			default:
			}
			rec := g.Record()
			s.quiet(t, int64(rec.Wire.Conns))
			if s.h1requests.Load() != 2 || s.late.Load() != 0 || s.conns.Load() != 2 {
				t.Errorf("server: %d requests, %d after its close, %d conns; want 2, 0, 2", s.h1requests.Load(), s.late.Load(), s.conns.Load())
			}
			if rec.Requests != 2 || rec.Wire.Dials != 2 || rec.Conns != 2 {
				t.Errorf("record: %d requests, %d dials, %d conns; want 2, 2, 2", rec.Requests, rec.Wire.Dials, rec.Conns)
			}
		})
	}
}

// selfRedirects redirects every request to itself three times (307, the
// method kept: /mcp, /mcp/1, /mcp/2, /mcp/3) before next answers it.
func selfRedirects(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hop, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/mcp/"))
		if hop < data.MaxRedirects {
			io.Copy(io.Discard, r.Body)
			http.Redirect(w, r, fmt.Sprintf("/mcp/%d", hop+1), http.StatusTemporaryRedirect)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// TestWireRequestCap: a check sends at most
// maxRequestsPerCheck requests, redirect hops included. A server that
// redirects each request to itself three times receives exactly that many
// (before: 52 and more); the request past it is refused with its reason,
// and the check's verdict still comes from what the server answered.
func TestWireRequestCap(t *testing.T) {
	mux := legacyMux("2025-11-25")
	mux["tools/list"] = func(w http.ResponseWriter, _ *http.Request, m rpcRequest) { // two pages
		if strings.Contains(string(m.Params), "cursor") {
			writeResult(w, m.ID, map[string]any{"tools": toolList("beta")})
			return
		}
		writeResult(w, m.ID, map[string]any{"tools": toolList("alpha"), "nextCursor": "2"})
	}
	srv := startFlowServer(t, selfRedirects(mux), serverOpts{http1: true})
	t.Run("S3_requests_per_check_capped", func(t *testing.T) {
		c := newTestChecker(t, srv.Lab, 0)
		res, rec := c.Check(context.Background(), srv.target())
		got := len(srv.rec.requests())
		if got != maxRequestsPerCheck || rec.Requests != got {
			t.Errorf("server received %d requests, record %d; want %d", got, rec.Requests, maxRequestsPerCheck)
		}
		if res.Status != data.Working {
			t.Errorf("concluded %s %q; want working: the handshake and the first page were answered; transcript:\n%s", res.Status, res.Detail, transcriptText(rec))
		}
	})
	t.Run("S3_request_past_the_cap_refused_with_its_reason", func(t *testing.T) {
		before := len(srv.rec.requests())
		g := newTestGuard(t, GuardConfig{Lab: srv.Lab})
		var err error
		for range maxRequestsPerCheck/4 + 1 {
			if _, err = do(t, g, http.MethodPost, srv.URL+"/mcp", initializeBody, nil); err != nil {
				break
			}
		}
		rec := g.Record()
		ex := rec.Exchanges[len(rec.Exchanges)-1]
		if got := len(srv.rec.requests()) - before; got != maxRequestsPerCheck || rec.Requests != got || err == nil || ex.ErrKind != ErrRequestCap {
			t.Errorf("server received %d requests, record %d, last %v %q (err %v); want %d and the cap", got, rec.Requests, ex.ErrKind, ex.Detail, err, maxRequestsPerCheck)
		}
		v, _ := transportVerdict(ex, classifyContext{})
		if want := fmt.Sprintf("more than %d requests needed", maxRequestsPerCheck); v.status != data.Failing || v.detail != want {
			t.Errorf("verdict %s %q, want failing %q", v.status, v.detail, want)
		}
	})
}

// TestWireExchangeAllowance: what may be read off
// the socket is bounded per exchange, not pooled. Three same-host redirects
// (small answers) then a 1 MB answer in one-byte chunks (6 MB on the wire):
// before, the redirects' unused allowance let the last answer read all of
// it; now it is cut at its own allowance.
func TestWireExchangeAllowance(t *testing.T) {
	t.Parallel()
	var wrote atomic.Int64
	srv, rc, g := guardedServer(t, selfRedirects(hijacked(t, &wrote, writeChunkedMB)), nil)
	t.Run("N9_one_exchange_cannot_use_another_s_allowance", func(t *testing.T) {
		_, err := do(t, g, http.MethodPost, srv.URL+"/mcp", initializeBody, nil)
		rec := g.Record()
		ex := rec.Exchanges[len(rec.Exchanges)-1]
		limit := int64(rec.Wire.Dials)*wireConnAllowance + wireAnswerAllowance + 16<<10 // the redirects' answers
		if err == nil || ex.ErrKind != ErrTooLarge || ex.Detail != errWireBudget.Detail || rec.Wire.BytesRead > limit {
			t.Errorf("err %v, last exchange %v %q, %d B off the socket; want %q within %d B", err, ex.ErrKind, ex.Detail, rec.Wire.BytesRead, errWireBudget.Detail, limit)
		}
		if n := len(rc.seen()); n != data.MaxRedirects+1 || rec.Requests != n {
			t.Errorf("server received %d requests, record %d; want %d", n, rec.Requests, data.MaxRedirects+1)
		}
		t.Logf("server wrote %d B of chunks, %d B read off the socket", wrote.Load(), rec.Wire.BytesRead)
	})
}

// TestAttemptAdmission proves the resend rule on the tries
// net/http makes of one request: the first goes on any connection; once it
// failed with no byte of an answer, one more goes on a fresh connection
// only (a kept-alive one offered instead is refused: it may be as dead),
// written or not; once a byte of an answer came, none; and the guard
// resends only a request whose every try was on a kept-alive connection.
func TestAttemptAdmission(t *testing.T) {
	tests := []struct {
		name     string
		tries    []bool // Reused of each try, in order
		written  int    // the try (from 1) after which a byte was written; 0: never
		answered int    // the try (from 1) after which a byte of an answer came; 0: never
		admitted []bool
		resend   bool
	}{
		{"S3_first_try_on_a_kept_alive_conn", []bool{true}, 0, 0, []bool{true}, true},
		{"S3_first_try_on_a_fresh_conn_not_resent", []bool{false}, 0, 0, []bool{true}, false},
		{"S3_unwritten_retry_on_a_fresh_conn_once", []bool{true, false, false}, 0, 0, []bool{true, true, false}, false},
		{"S3_unwritten_retry_on_a_kept_alive_conn_refused", []bool{true, true, false}, 0, 0, []bool{true, false, true}, false},
		{"S3_written_unanswered_on_a_kept_alive_conn_resent", []bool{true}, 1, 0, []bool{true}, true},
		{"S3_written_unanswered_retry_on_a_fresh_conn_once", []bool{true, false, false}, 1, 0, []bool{true, true, false}, false},
		{"S3_answered_never_again", []bool{true, false}, 1, 1, []bool{true, false}, false},
		{"S3_answered_not_resent", []bool{true}, 1, 1, []bool{true}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &attempt{g: &Guard{}}
			for i, reused := range tc.tries {
				rc := &reqConn{}
				a.gotConn(httptrace.GotConnInfo{Conn: rc, Reused: reused})
				if admitted := !rc.refused.Load(); admitted != tc.admitted[i] {
					t.Errorf("try %d (reused %v): admitted %v, want %v", i+1, reused, admitted, tc.admitted[i])
				}
				if i+1 == tc.written {
					a.wrote(+1)
				}
				if i+1 == tc.answered {
					a.answered.Store(true)
				}
			}
			if got := a.resendable(); got != tc.resend {
				t.Errorf("resendable %v, want %v", got, tc.resend)
			}
		})
	}
}

// TestWireResendUnanswered proves the resend rule at the server: a request
// that got no byte of an answer on a kept-alive connection (the server
// closed it as the request arrived) goes once more, on a fresh connection,
// as curl and Chromium resend it; the record counts both sends. A request
// that got an answer byte, or got none on a fresh connection (a server that
// swallows a POST), is never sent again, and a resend that is swallowed too
// is not sent a third time.
func TestWireResendUnanswered(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		method string         // the second request's; "" when the first is all
		server map[int]string // what the server does with its n-th request (from 1): "close" without an answer, "partial" answer then close; else it answers
		ok     bool           // the last request gets its answer
		served int            // requests the server received
		conns  int            // connections it accepted
	}{
		{"S3_POST_unanswered_on_a_kept_alive_conn_goes_once_more_on_a_fresh_one", http.MethodPost, map[int]string{2: "close"}, true, 3, 2},
		{"S3_GET_unanswered_on_a_kept_alive_conn_goes_once_more_on_a_fresh_one", http.MethodGet, map[int]string{2: "close"}, true, 3, 2},
		{"S3_POST_unanswered_twice_not_sent_a_third_time", http.MethodPost, map[int]string{2: "close", 3: "close"}, false, 3, 2},
		{"S3_GET_unanswered_twice_not_sent_a_third_time", http.MethodGet, map[int]string{2: "close", 3: "close"}, false, 3, 2},
		{"S3_POST_with_an_answer_byte_not_resent", http.MethodPost, map[int]string{2: "partial"}, false, 2, 1},
		{"S3_GET_with_an_answer_byte_not_resent", http.MethodGet, map[int]string{2: "partial"}, false, 2, 1},
		{"S3_POST_unanswered_on_a_fresh_conn_not_resent", "", map[int]string{1: "close"}, false, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var got []string
			cl := &countingListener{}
			srv := startLabServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.ReadAll(r.Body)
				mu.Lock()
				got = append(got, r.Method)
				n := len(got)
				mu.Unlock()
				switch tc.server[n] {
				case "close", "partial":
					c, buf, err := w.(http.Hijacker).Hijack()
					if err != nil {
						t.Errorf("hijack: %v", err)
						return
					}
					if tc.server[n] == "partial" {
						buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: appl")
						buf.Flush()
					}
					c.Close()
					return
				}
				writeResult(w, []byte("1"), initResult("2025-11-25"))
			}), labServerConfig{Wrap: cl.wrap})
			g := newTestGuard(t, GuardConfig{Lab: srv.Lab, DialContext: onlyDial(t, srv)})
			_, err := do(t, g, http.MethodPost, srv.URL+"/mcp", initializeBody, nil)
			if tc.method != "" {
				if err != nil {
					t.Fatalf("first POST: %v", err)
				}
				body := ""
				if tc.method == http.MethodPost {
					body = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
				}
				_, err = do(t, g, tc.method, srv.URL+"/mcp", body, nil)
			}
			g.Close()
			rec := g.Record()
			mu.Lock()
			defer mu.Unlock()
			served := len(got)
			if (err == nil) != tc.ok {
				t.Errorf("last request: err %v, want an answer: %v; transcript:\n%s", err, tc.ok, transcriptText(rec))
			}
			want := []string{http.MethodPost}
			for len(want) < tc.served {
				want = append(want, tc.method)
			}
			if !slices.Equal(got, want) || int(cl.conns.Load()) != tc.conns {
				t.Errorf("server received %q on %d connections, want %q on %d", got, cl.conns.Load(), want, tc.conns)
			}
			if rec.Requests != served || rec.Conns != int(cl.conns.Load()) {
				t.Errorf("record: %d requests, %d connections; the server: %d, %d", rec.Requests, rec.Conns, served, cl.conns.Load())
			}
		})
	}
}
