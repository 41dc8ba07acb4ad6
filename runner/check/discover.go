package check

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"plug.directory/prober/data"
)

// The modern flow (rule N4, protocol 2026-07-28 and later): server/discover,
// then tools/list, over Streamable HTTP. The SDK sends server/discover when
// asked for such a version, and on any answer that is not a modern error it
// falls back to initialize (2025-11-25) on the same connection by itself.

// streamable runs the Streamable HTTP flow asking for version: server/discover
// first when version is 2026-07-28 or later, else initialize. When discover
// got a 200 that was not JSON-RPC (the SDK then drops the connection and
// cannot fall back), it retries once with initialize on a fresh transport.
// With allowSSE it tries the legacy HTTP+SSE transport when the initialize
// POST is answered 400, 404 or 405 without a modern error code, or at once
// when server/discover was answered 404 or 405 with something that is not
// JSON-RPC: the address takes no POSTs, so an initialize would only be
// answered the same (a legacy server's first check costs 5 requests, not 6).
// Should the GET be refused too, initialize is asked after all. It reports
// whether a handshake succeeded.
func (f *flow) streamable(ctx context.Context, version string, allowSSE bool) bool {
	f.setSkipInitialize(allowSSE)
	ok := f.session(ctx, f.streamableTransport(), data.TransportStreamable, version)
	f.setSkipInitialize(false)
	if ok {
		return true
	}
	if version >= protocolModern && ctx.Err() == nil && discoverBroke(f.guard.Record()) {
		if f.session(ctx, f.streamableTransport(), data.TransportStreamable, protocolLegacy) {
			return true
		}
	}
	if !allowSSE || ctx.Err() != nil {
		return false
	}
	rec := f.guard.Record()
	noPosts := takesNoPosts(rec)
	if !noPosts && !wantsLegacySSE(rec) {
		return false
	}
	if f.sse(ctx) {
		return true
	}
	if noPosts && ctx.Err() == nil && sseGone(f.guard.Record()) {
		// No POSTs to discover and no event stream either: initialize is
		// the one question not asked yet.
		return f.session(ctx, f.streamableTransport(), data.TransportStreamable, protocolLegacy)
	}
	return false
}

// streamableTransport returns a fresh Streamable HTTP transport over the
// guard's client, set as the notes require: no standalone GET after
// initialize, no resume GET with Last-Event-ID. The guard keeps its posts on
// one HTTP/1.1 connection.
func (f *flow) streamableTransport() *mcp.StreamableClientTransport {
	return &mcp.StreamableClientTransport{
		Endpoint:             f.url,
		HTTPClient:           f.guard.Client(),
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}
}

// discoverBroke reports whether server/discover was answered 200 with
// something the SDK could not read as JSON-RPC and no initialize followed:
// the SDK drops the connection then, so the fallback needs a fresh one.
func discoverBroke(rec Record) bool {
	i := lastRPCExchange(rec, "server/discover")
	if i < 0 {
		return false
	}
	ex := rec.Exchanges[i]
	if ex.Status != http.StatusOK || ex.ErrKind != ErrNone || rec.Refusal != 0 {
		return false
	}
	for _, later := range rec.Exchanges[i+1:] {
		if later.RPCMethod == "initialize" {
			return false
		}
	}
	return true
}

// lastRPCExchange returns the index of the last exchange the check attempted
// for the JSON-RPC method (refused redirects included, messages the guard
// kept from leaving not), or -1.
func lastRPCExchange(rec Record, rpcMethod string) int {
	for i := len(rec.Exchanges) - 1; i >= 0; i-- {
		ex := rec.Exchanges[i]
		if ex.RPCMethod == rpcMethod && ex.ErrKind != ErrBlocked {
			return i
		}
	}
	return -1
}
