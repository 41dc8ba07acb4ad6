package check

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What the flow does with a tools/list answer before and after the SDK
// reads it: it keeps the SDK's tool filter to the tools
// that filter can refuse, and names an answer the SDK could not read.

// headerKey is the key of the SDK's parameter-header annotations.
const headerKey = "x-mcp-header"

// holdTools keeps the tools of a tools/list page and leaves the result only
// those that carry an x-mcp-header: the SDK's filter (filterValidTools),
// which drops a tool whose annotations are invalid, re-encodes and decodes
// every tool's inputSchema with a fresh 32 KB buffer, and made a page of
// 13,000 tools cost it 400 MB of garbage. A tool without
// that key anywhere in its inputSchema always passes it; takeTools puts the
// page back together in the server's order.
func (f *flow) holdTools(r *mcp.ListToolsResult) {
	annotated := map[*mcp.Tool]bool{}
	var pass []*mcp.Tool
	for _, t := range r.Tools {
		if hasKey(t.InputSchema, headerKey) {
			annotated[t] = true
			pass = append(pass, t)
		}
	}
	f.mu.Lock()
	f.held, f.heldAnnotated = r.Tools, annotated
	f.mu.Unlock()
	r.Tools = pass
}

// takeTools returns the tools of the page held by holdTools without those
// the SDK's filter dropped (kept is what it let through), in the server's
// order; kept itself when no page is held.
func (f *flow) takeTools(kept []*mcp.Tool) []*mcp.Tool {
	f.mu.Lock()
	all, annotated := f.held, f.heldAnnotated
	f.held, f.heldAnnotated = nil, nil
	f.mu.Unlock()
	if all == nil {
		return kept
	}
	ok := make(map[*mcp.Tool]bool, len(kept))
	for _, t := range kept {
		ok[t] = true
	}
	out := make([]*mcp.Tool, 0, len(all))
	for _, t := range all {
		if !annotated[t] || ok[t] {
			out = append(out, t)
		}
	}
	return out
}

// hasKey reports whether an object anywhere in v has the key k.
func hasKey(v any, k string) bool {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x[k]; ok {
			return true
		}
		for _, e := range x {
			if hasKey(e, k) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasKey(e, k) {
				return true
			}
		}
	}
	return false
}

// noteToolsUnread keeps why the SDK failed on a tools/list answer that came
// whole (HTTP 200, read to its end) and was no JSON-RPC error: else the
// check would be named after an earlier request it had moved on from (a
// server/discover answered -32601).
func (f *flow) noteToolsUnread(err error) {
	var rerr *jsonrpc.Error
	if errors.As(err, &rerr) {
		return
	}
	rec := f.guard.Record()
	i := lastRPCExchange(rec, "tools/list")
	if i < 0 || rec.Exchanges[i].Status != http.StatusOK || rec.Exchanges[i].ErrKind != ErrNone {
		return
	}
	why := "answer is no tools/list result the MCP SDK can read"
	if rec.Exchanges[i].Nesting > sdkMaxNesting {
		why = fmt.Sprintf("answer nests deeper than %d levels: the MCP SDK cannot read it", sdkMaxNesting)
	}
	f.mu.Lock()
	f.found.ToolsUnread = why
	f.mu.Unlock()
}
