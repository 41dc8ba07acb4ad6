package check

import (
	"context"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"plug.directory/prober/data"
)

// The legacy HTTP+SSE flow (rule N4, protocol 2024-11-05): one GET opens the
// event stream, whose first event names the endpoint; initialize,
// notifications/initialized and tools/list are posted there and answered on
// the stream.

// sse runs the legacy flow and reports whether its handshake succeeded. It
// asks for 2024-11-05: with a newer version the SDK would post
// server/discover to the endpoint first.
func (f *flow) sse(ctx context.Context) bool {
	hc := *f.guard.Client()
	hc.Transport = notSentIsRejected{hc.Transport}
	t := &mcp.SSEClientTransport{Endpoint: f.url, HTTPClient: &hc}
	return f.session(ctx, t, data.TransportSSE, protocolSSE)
}

// sseGone reports whether the legacy stream's GET was answered 400, 404 or
// 405: the server no longer speaks HTTP+SSE at this address.
func sseGone(rec Record) bool {
	for i := len(rec.Exchanges) - 1; i >= 0; i-- {
		ex := rec.Exchanges[i]
		if ex.Method != http.MethodGet || ex.ErrKind == ErrBlocked {
			continue
		}
		switch ex.Status {
		case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
			return rec.Refusal == 0
		}
		return false
	}
	return false
}

// rejectedByTransport is the SDK's "rejected by transport" error (matched by
// code): a write that fails with it does not break the JSON-RPC connection.
var rejectedByTransport = &jsonrpc.Error{Code: codeRejected, Message: "not sent"}

// notSentIsRejected marks the failures of legacy-SSE posts as rejected by
// transport. The SDK's SSE connection, unlike its Streamable HTTP one, would
// otherwise take the guard's refusal of its answer to a server's request
// (rule N3) for a broken connection and fail the tools/list that follows.
type notSentIsRejected struct{ rt http.RoundTripper }

// RoundTrip passes req to the guard and marks a POST's failure as rejected.
func (n notSentIsRejected) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := n.rt.RoundTrip(req)
	if err != nil && req.Method == http.MethodPost {
		return nil, fmt.Errorf("%w: %w", err, rejectedByTransport)
	}
	return resp, err
}
