package check

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"plug.directory/prober/data"
)

// bodyHandler answers with size bytes of content type ct, gzip-compressed
// (once, up front) when gz; a gzip answer fails the test unless the client
// asked for gzip.
func bodyHandler(t *testing.T, size int, ct string, gz bool) http.Handler {
	payload := bytes.Repeat([]byte("a"), size)
	if gz {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		zw.Write(payload)
		zw.Close()
		payload = buf.Bytes()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ct)
		if gz {
			if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
				t.Errorf("client did not ask for gzip: Accept-Encoding %q", r.Header.Get("Accept-Encoding"))
			}
			w.Header().Set("Content-Encoding", "gzip")
		}
		w.Write(payload)
	})
}

// TestAnswerLimit proves rule N9: exactly 1,048,576 bytes of an answer are
// read, counted after decompression; the next byte fails the answer.
func TestAnswerLimit(t *testing.T) {
	t.Parallel()
	const max = data.MaxAnswerBytes
	if max != 1048576 {
		t.Fatalf("data.MaxAnswerBytes = %d, the checks page promises 1,048,576", max)
	}
	for _, h2 := range []bool{false, true} {
		for _, c := range []struct {
			name string
			size int
			ct   string
			gz   bool
		}{
			{"N9_exactly_1MiB_plain", max, "application/json", false},
			{"N9_1MiB_plus_1_plain_cut", max + 1, "application/json", false},
			{"N9_exactly_1MiB_gzip", max, "application/json", true},
			{"N9_1MiB_plus_1_gzip_cut", max + 1, "application/json", true},
			{"N9_gzip_bomb_cut", 8 * max, "application/json", true},
			{"N9_1MiB_plus_1_event_stream_cut", max + 1, "text/event-stream", false},
		} {
			name := c.name
			if h2 {
				name += "_http2"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				rc := &recorder{next: bodyHandler(t, c.size, c.ct, c.gz)}
				srv := startLabServer(t, rc, labServerConfig{HTTP2: h2})
				g := newTestGuard(t, GuardConfig{Lab: srv.Lab, DialContext: onlyDial(t, srv)})
				resp, err := post(t, g, srv.URL+"/mcp", initializeBody)
				if err != nil {
					t.Fatal(err)
				}
				if c.gz && !resp.Uncompressed {
					t.Error("answer was not gzip-compressed on the wire: the test proves nothing")
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				want := int64(min(c.size, max))
				if n != want {
					t.Errorf("read %d bytes, want %d", n, want)
				}
				ex := g.Record().Exchanges[0]
				if c.size <= max {
					if err != nil || ex.ErrKind != ErrNone {
						t.Errorf("answer of %d bytes: err %v kind %v, want none", c.size, err, ex.ErrKind)
					}
				} else if err == nil || ex.ErrKind != ErrTooLarge || ex.Detail != "answer over 1 MB" {
					t.Errorf("answer of %d bytes: err %v kind %v detail %q, want %v", c.size, err, ex.ErrKind, ex.Detail, ErrTooLarge)
				}
				if ex.Bytes != want || g.Record().BytesRead != want {
					t.Errorf("Bytes = %d, BytesRead = %d, want %d", ex.Bytes, g.Record().BytesRead, want)
				}
				if len(ex.BodyHead) != headSize || ex.BodyHead[0] != 'a' {
					t.Errorf("BodyHead has %d bytes, want %d decompressed", len(ex.BodyHead), headSize)
				}
			})
		}
	}
}

// TestHeaderLimit proves rule N9 for headers: an answer's headers are read
// up to 64 KiB, not net/http's default 10 MB.
func TestHeaderLimit(t *testing.T) {
	t.Parallel()
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("N9_headers_over_64KiB_http2_%v", h2), func(t *testing.T) {
			srv := startLabServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for i := range 40 {
					w.Header().Set(fmt.Sprintf("X-Pad-%d", i), strings.Repeat("p", 4000))
				}
				io.WriteString(w, "{}")
			}), labServerConfig{HTTP2: h2})
			g := newTestGuard(t, GuardConfig{Lab: srv.Lab, DialContext: onlyDial(t, srv)})
			if !h2 {
				assertFailure(t, g, srv.URL+"/mcp", nil, ErrTooLarge, "answer headers over 64 KB")
				return
			}
			// HTTP/2 ends the connection with a bare PROTOCOL_ERROR: the
			// answer is refused all the same, only its reason is vaguer.
			if _, err := post(t, g, srv.URL+"/mcp", initializeBody); err == nil {
				t.Fatal("headers over 64 KiB accepted")
			}
			if ex := lastExchange(t, g); ex.Status != 0 || (ex.ErrKind != ErrTooLarge && ex.ErrKind != ErrNetwork) {
				t.Errorf("exchange %+v: want no status and too_large or network", ex)
			}
		})
	}
}

// TestEndlessStream proves rule N9 for an SSE stream that never ends: it is
// one answer, cut at 1 MiB, and the connection is dropped so the server
// stops sending.
func TestEndlessStream(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("N9_endless_event_stream_cut_http2_%v", h2), func(t *testing.T) {
			stopped := make(chan struct{})
			event := []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n")
			srv := startLabServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer close(stopped)
				w.Header().Set("Content-Type", "text/event-stream")
				for {
					if _, err := w.Write(event); err != nil {
						return
					}
					if r.Context().Err() != nil {
						return
					}
				}
			}), labServerConfig{HTTP2: h2})
			g := newTestGuard(t, GuardConfig{Lab: srv.Lab, DialContext: onlyDial(t, srv)})
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/sse", nil)
			resp, err := g.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if n != data.MaxAnswerBytes || err == nil {
				t.Errorf("read %d bytes, err %v; want %d and an error", n, err, data.MaxAnswerBytes)
			}
			if ex := lastExchange(t, g); ex.ErrKind != ErrTooLarge {
				t.Errorf("ErrKind = %v, want %v", ex.ErrKind, ErrTooLarge)
			}
			select { // the cut itself (not Guard.Close) ends the stream
			case <-stopped:
			case <-time.After(10 * time.Second):
				t.Fatal("server still streaming 10 s after the cut")
			}
		})
	}
}

// TestAnswerHead proves that the start of an answer the SDK never reads is
// still recorded (an HTML page, a challenge), and that the duration ends when
// the body is closed.
func TestAnswerHead(t *testing.T) {
	const page = "<!DOCTYPE html><html><title>Just a moment...</title></html>"
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { // each reading one second later
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
	srv, _, g := guardedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, page)
	}), func(c *GuardConfig) { c.Now = clock })
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/mcp", strings.NewReader(initializeBody))
	resp, err := g.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // unread, as the SDK does with an unexpected content type
	ex := g.Record().Exchanges[0]
	if string(ex.BodyHead) != page || ex.Status != 200 || ex.Header.Get("Content-Type") != "text/html" {
		t.Errorf("exchange %+v: want the HTML page recorded", ex)
	}
	if ex.Duration <= 0 || ex.Duration%time.Second != 0 {
		t.Errorf("Duration = %v, want whole seconds of the injected clock", ex.Duration)
	}
}

// hijacked answers every request by writing raw bytes on the connection
// (from write), then closing it; wrote counts what it managed to write.
func hijacked(t *testing.T, wrote *atomic.Int64, write func(w io.Writer) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		c, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer c.Close()
		cw := &countingWriter{w: buf, n: wrote}
		if write(cw) == nil {
			buf.Flush()
		}
	})
}

// writeChunkedMB writes an answer of 1 MB in one-byte chunks: six times
// its size on the wire.
func writeChunkedMB(w io.Writer) error {
	io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
	chunk := []byte(strings.Repeat("1\r\nx\r\n", 1<<10))
	for range data.MaxAnswerBytes >> 10 {
		if _, err := w.Write(chunk); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "0\r\n\r\n")
	return err
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// TestTooLargeLabels proves each limit is named in the verdict: headers over
// 64 KB, a flood of 1xx answers (net/http counts their headers against the
// same 64 KB) and an answer whose framing passes its allowance on the wire
// each say what happened, not "answer over 1 MB"; the server received the
// requests the record counts, and what was read stayed within the allowance.
func TestTooLargeLabels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		write func(w io.Writer) error
		want  string
	}{
		{"N9_headers_over_64KB", func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Pad: %s\r\nContent-Length: 2\r\n\r\n{}", strings.Repeat("p", 70<<10))
			return err
		}, "failing: answer headers over 64 KB"},
		{"N9_flood_of_1xx_answers", func(w io.Writer) error {
			for range 4000 {
				if _, err := io.WriteString(w, "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"); err != nil {
					return err
				}
			}
			return nil
		}, "failing: answer headers over 64 KB"},
		{"N9_framing_over_the_wire_allowance", writeChunkedMB, "failing: " + errWireBudget.Detail},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var wrote atomic.Int64
			srv := startFlowServer(t, hijacked(t, &wrote, tc.write), serverOpts{http1: true})
			c := newTestChecker(t, srv.Lab, 0)
			res, rec := c.Check(context.Background(), srv.target())
			if v := string(res.Status) + ": " + res.Detail; v != tc.want {
				t.Errorf("concluded %q, want %q; transcript:\n%s", v, tc.want, transcriptText(rec))
			}
			limit := int64(rec.Wire.Dials)*wireConnAllowance + int64(rec.Requests)*wireAnswerAllowance
			if got := len(srv.rec.requests()); got != rec.Requests || rec.Wire.BytesRead > limit {
				t.Errorf("server received %d requests and wrote %d B; record: %d requests, %d B read (allowance %d)", got, wrote.Load(), rec.Requests, rec.Wire.BytesRead, limit)
			}
		})
	}
}

// TestStreamAfterAnswer: once the answer to a POST
// has arrived on its event stream, the stream is not read further. The
// server answers initialize with the answer event and then junk without
// end; before, the check read 1 MB of it to the cap before going on. Now
// the check is working, reads a few KB of that stream, and the server's
// stream ends (the connection was closed under it). A stream that ends
// right after its answer keeps its connection: the next request reuses it.
func TestStreamAfterAnswer(t *testing.T) {
	for _, junk := range []bool{true, false} {
		t.Run(fmt.Sprintf("N9_stream_not_read_past_its_answer_junk_%v", junk), func(t *testing.T) {
			stopped := make(chan struct{})
			var wrote atomic.Int64
			mux := legacyMux("2025-11-25", "alpha")
			mux["initialize"] = func(w http.ResponseWriter, r *http.Request, m rpcRequest) {
				defer close(stopped)
				writeSSE(w, rpcResponse(m.ID, initResult("2025-11-25"), nil))
				if !junk {
					return
				}
				for r.Context().Err() == nil {
					n, err := io.WriteString(w, ": junk "+strings.Repeat("j", 4<<10)+"\n\n")
					wrote.Add(int64(n))
					if err != nil {
						return
					}
				}
			}
			srv := startFlowServer(t, mux, serverOpts{http1: true})
			c := newTestChecker(t, srv.Lab, 0)
			res, rec := c.Check(context.Background(), srv.target())
			if res.Status != data.Working {
				t.Fatalf("concluded %s %q; transcript:\n%s", res.Status, res.Detail, transcriptText(rec))
			}
			select {
			case <-stopped:
			case <-time.After(5 * time.Second):
				t.Fatal("server still streaming 5 s after the check")
			}
			var ini Exchange
			for _, ex := range rec.Exchanges {
				if ex.RPCMethod == "initialize" {
					ini = ex
				}
			}
			if ini.Bytes > 1<<10 || rec.Wire.BytesRead > 64<<10 || len(srv.rec.requests()) != rec.Requests {
				t.Errorf("initialize answer %d B read, %d B off the sockets (server wrote %d B of junk); server received %d requests, record %d",
					ini.Bytes, rec.Wire.BytesRead, wrote.Load(), len(srv.rec.requests()), rec.Requests)
			}
			if wantConns := map[bool]int{true: 2, false: 1}[junk]; rec.Wire.Conns != wantConns {
				t.Errorf("%d connections, want %d", rec.Wire.Conns, wantConns)
			}
		})
	}
}
