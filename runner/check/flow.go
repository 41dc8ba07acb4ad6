package check

import (
	"context"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"plug.directory/prober/data"
)

// The choice of flow (rule N4): what earlier checks learned of a server
// picks where its check starts; the flows themselves live in discover.go,
// initialize.go and sse.go.

// run walks the flows of rule N4 for t, starting from what earlier checks
// learned, and falls back as the MCP specification's backwards-compatibility
// section says. What it finds goes into f.found.
func (f *flow) run(ctx context.Context, t Target) {
	switch {
	case t.Transport == data.TransportSSE:
		if f.sse(ctx) || ctx.Err() != nil || !sseGone(f.guard.Record()) {
			return
		}
		// The legacy stream is gone (400, 404 or 405 to its GET, or a
		// stream naming no endpoint): the server may have moved to
		// Streamable HTTP, so learn its era afresh.
		f.streamable(ctx, protocolModern, false)
	case t.Protocol >= protocolModern && slices.Contains(mcp.SupportedProtocolVersions(), t.Protocol):
		f.streamable(ctx, t.Protocol, true)
	case t.Protocol != "" && t.Protocol < protocolModern:
		ok := f.streamable(ctx, protocolLegacy, true)
		if ctx.Err() != nil || ok && f.snapshot().ToolsOK {
			return
		}
		rec := f.guard.Record()
		if !modernVersionNamed(rec) && (ok || !initializeRefused(rec)) {
			return
		}
		f.moveOn(ctx)
	default:
		f.streamable(ctx, protocolModern, true)
	}
}

// moveOn asks again, in the same check, a server learned at the initialize
// era that refused the initialize it answered before, or refused
// its notification or tools/list naming 2026-07-28 (go-sdk restricted to
// that version answers initialize, then refuses the rest): with
// initialize of an older version when its -32022 names one the SDK speaks
// (a strict 2025-06-18 server), else with server/discover (a -32022 naming
// only 2026-07-28, as @mastra/mcp 2.x answers, or any other refusal). The
// SDK's own fallback from discover to initialize is held back then: it would
// be refused the same, and a check has a request budget. What the server
// answers is learned for the next checks.
func (f *flow) moveOn(ctx context.Context) {
	if v := olderVersionNamed(f.guard.Record()); v != "" {
		f.session(ctx, f.streamableTransport(), data.TransportStreamable, v)
		return
	}
	f.setHoldInitialize(true)
	defer f.setHoldInitialize(false)
	f.streamable(ctx, protocolModern, false)
}
