package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"plug.directory/prober/data"
)

// The legacy HTTP+SSE flow (rule N4, protocol 2024-11-05): one GET opens the
// event stream, whose first event names the endpoint; initialize,
// notifications/initialized and tools/list are posted there and answered on
// the stream.

// endpointWait bounds how long the legacy stream may stay silent after its
// answer's headers before its endpoint event. A legacy server sends that
// event at once (go-sdk's SSEHandler, the TypeScript and Python SDKs write
// it with the headers); a Streamable HTTP server's standalone stream, which
// a server that moved from HTTP+SSE at the same address answers the GET
// with, names none, and the SDK would wait for it the whole check.
const endpointWait = 5 * time.Second

// sse runs the legacy flow and reports whether its handshake succeeded. It
// asks for 2024-11-05: with a newer version the SDK would post
// server/discover to the endpoint first.
func (f *flow) sse(ctx context.Context) bool {
	hc := *f.guard.Client()
	w := &endpointWatch{}
	hc.Transport = legacyTransport{rt: hc.Transport, watch: w}
	t := awaitEndpoint{SSEClientTransport: &mcp.SSEClientTransport{Endpoint: f.url, HTTPClient: &hc}, watch: w}
	return f.session(ctx, t, data.TransportSSE, protocolSSE)
}

// sseGone reports whether the legacy stream's GET found no legacy server:
// answered 400, 404 or 405, or 2xx with a stream that named no endpoint
// (nothing was posted after it: its first event was another, or none came
// within endpointWait). The server no longer speaks HTTP+SSE at this
// address.
func sseGone(rec Record) bool {
	for i := len(rec.Exchanges) - 1; i >= 0; i-- {
		ex := rec.Exchanges[i]
		if ex.Method != http.MethodGet || ex.ErrKind == ErrBlocked {
			continue
		}
		switch {
		case rec.Refusal != 0:
			return false
		case ex.Status == http.StatusBadRequest, ex.Status == http.StatusNotFound, ex.Status == http.StatusMethodNotAllowed:
			return true
		case ex.Status >= 200 && ex.Status < 300:
			return i == len(rec.Exchanges)-1
		}
		return false
	}
	return false
}

// endpointWatch ends the legacy stream's GET when no endpoint event came
// within endpointWait of its answer's headers.
type endpointWatch struct {
	mu    sync.Mutex
	timer *time.Timer // started at the GET's headers; nil before
	done  bool        // the wait is over: the endpoint came, or the GET ended
}

// start arms the wait for the stream whose GET cancel ends.
func (w *endpointWatch) start(cancel context.CancelFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.timer = time.AfterFunc(endpointWait, cancel)
	}
}

// stop ends the wait and reports whether the stream is still whole: false
// when the wait ran out and ended the GET.
func (w *endpointWatch) stop() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	return w.timer == nil || w.timer.Stop()
}

// awaitEndpoint connects the SDK's legacy transport, which returns once
// the stream's first event named the endpoint, and ends the wait for it.
type awaitEndpoint struct {
	*mcp.SSEClientTransport
	watch *endpointWatch
}

// Connect opens the stream and reads its endpoint, or fails when the wait
// ran out first.
func (a awaitEndpoint) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := a.SSEClientTransport.Connect(ctx)
	if !a.watch.stop() && err == nil {
		_ = conn.Close() // the stream was ended as the endpoint came
		return nil, errNoEndpoint
	}
	return conn, err
}

// errNoEndpoint is the legacy transport's failure when the stream named no
// endpoint within endpointWait.
var errNoEndpoint = errors.New("legacy stream named no endpoint within " + endpointWait.String())

// rejectedByTransport is the SDK's "rejected by transport" error (matched by
// code): a write that fails with it does not break the JSON-RPC connection.
var rejectedByTransport = &jsonrpc.Error{Code: codeRejected, Message: "not sent"}

// legacyTransport is the legacy flow's way to the guard. It marks the
// failures of posts as rejected by transport: the SDK's SSE connection,
// unlike its Streamable HTTP one, would otherwise take the guard's refusal
// of its answer to a server's request (rule N3) for a broken connection and
// fail the tools/list that follows. And it gives the stream's GET a context
// of its own, which watch ends when no endpoint event comes in time.
type legacyTransport struct {
	rt    http.RoundTripper
	watch *endpointWatch
}

// RoundTrip passes req to the guard, marks a POST's failure as rejected,
// and starts the wait for the endpoint at a GET's answer.
func (l legacyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		resp, err := l.rt.RoundTrip(req)
		if err != nil && req.Method == http.MethodPost {
			return nil, fmt.Errorf("%w: %w", err, rejectedByTransport)
		}
		return resp, err
	}
	ctx, cancel := context.WithCancel(req.Context())
	resp, err := l.rt.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	l.watch.start(cancel)
	resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose ends a stream's own context when the stream is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

// Close closes the stream, then ends its context.
func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
