package check

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The 2025 flow (rule N4, protocols before 2026-07-28): initialize,
// notifications/initialized, tools/list over Streamable HTTP. The SDK runs it
// when asked for such a version (the flow's session with protocolLegacy), or
// by itself when server/discover is not known.

// wantsLegacySSE reports whether the initialize POST says the server only
// speaks the legacy HTTP+SSE transport, as the MCP specification's
// backwards-compatibility section puts it: answered 400, 404 or 405, without
// one of the modern error codes -32020 to -32022 in its body (a modern server
// rejecting our request with those must not be taken for a legacy one), and
// nothing refused.
func wantsLegacySSE(rec Record) bool {
	ex, ok := lastUnrefused(rec, "initialize")
	if !ok {
		return false
	}
	switch ex.Status {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
		return !modernErrorCode(ex.BodyHead)
	}
	return false
}

// initializeRefused reports whether the last initialize was answered, and
// refused: a JSON-RPC error in its answer, or a 4xx that is no refusal of
// the check (401, 403 and 429 conclude it). A server learned at the
// initialize era answering so may have moved on to server/discover.
func initializeRefused(rec Record) bool {
	ex, ok := lastUnrefused(rec, "initialize")
	if !ok || ex.ErrKind != ErrNone {
		return false
	}
	return ex.Status >= 400 && ex.Status < 500 || rpcErrorAnswer(ex.BodyHead)
}

// modernVersionNamed reports whether the last answer of the initialize
// era's flow (to initialize, notifications/initialized or tools/list) was a
// refusal, a 4xx that is no refusal of the check or a JSON-RPC error, whose
// first bytes name a version of 2026-07-28 or later that the SDK speaks:
// the server has moved on to server/discover. go-sdk restricted to
// 2026-07-28 answers an initialize of 2025-11-25 with 200 and that version,
// then refuses what follows with 400 "Bad Request: Unsupported protocol
// version (supported versions: 2026-07-28)" (mcp/streamable.go). The flow
// asks only versions before 2026-07-28 there, so such a version in the
// answer is the server's, not an echo of the request.
func modernVersionNamed(rec Record) bool {
	i := max(lastRPCExchange(rec, "initialize"), lastRPCExchange(rec, "notifications/initialized"), lastRPCExchange(rec, "tools/list"))
	if rec.Refusal != 0 || i < 0 {
		return false
	}
	ex := rec.Exchanges[i]
	if ex.ErrKind != ErrNone || !(ex.Status >= 400 && ex.Status < 500 || rpcErrorAnswer(ex.BodyHead)) {
		return false
	}
	for _, v := range mcp.SupportedProtocolVersions() {
		if v >= protocolModern && bytes.Contains(ex.BodyHead, []byte(v)) {
			return true
		}
	}
	return false
}

// olderVersionNamed returns the newest version before 2026-07-28 that the
// SDK speaks, other than the one asked, among those a -32022 answer to the
// last initialize names as spoken by the server (its data.supported), or ""
// when there is none or the server names one of 2026-07-28 or later too
// (server/discover is then the better question).
func olderVersionNamed(rec Record) string {
	ex, ok := lastUnrefused(rec, "initialize")
	if !ok {
		return ""
	}
	var msg struct {
		Error *struct {
			Code int                                 `json:"code"`
			Data *mcp.UnsupportedProtocolVersionData `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal(ex.BodyHead, &msg) != nil || msg.Error == nil || msg.Error.Code != mcp.CodeUnsupportedProtocolVersion || msg.Error.Data == nil {
		return ""
	}
	for _, v := range mcp.SupportedProtocolVersions() { // newest first
		switch {
		case !slices.Contains(msg.Error.Data.Supported, v):
		case v >= protocolModern:
			return ""
		case v != protocolLegacy:
			return v
		}
	}
	return ""
}

// lastUnrefused returns the last exchange for the JSON-RPC method when the
// check saw no refusal (which decides it whatever the answer was).
func lastUnrefused(rec Record, rpcMethod string) (Exchange, bool) {
	i := lastRPCExchange(rec, rpcMethod)
	if rec.Refusal != 0 || i < 0 {
		return Exchange{}, false
	}
	return rec.Exchanges[i], true
}

// rpcErrorAnswer reports whether body is a JSON-RPC error answer.
func rpcErrorAnswer(body []byte) bool {
	var msg struct {
		Error *json.RawMessage `json:"error"`
	}
	return json.Unmarshal(body, &msg) == nil && msg.Error != nil
}

// takesNoPosts reports whether server/discover was answered 404 or 405 with
// a body that is not JSON-RPC (a web server's "Cannot POST", an empty 405),
// or 400 with go-sdk's legacy SSE handler's own words,
// nothing refused and no initialize asked since: the address takes no POSTs
// at all, whatever their message, as a legacy HTTP+SSE server's stream
// address does. A server that does not know server/discover answers it with
// a JSON-RPC error instead.
func takesNoPosts(rec Record) bool {
	if rec.Refusal != 0 {
		return false
	}
	i := lastRPCExchange(rec, "server/discover")
	if i < 0 || lastRPCExchange(rec, "initialize") > i {
		return false
	}
	ex := rec.Exchanges[i]
	switch ex.Status {
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return jsonNotRPC(bytes.TrimSpace(ex.BodyHead), ex.Bytes) != ""
	case http.StatusBadRequest:
		// go-sdk's SSEHandler answers a POST to its stream address, which
		// names no session, with exactly this (mcp/sse.go: http.Error(w,
		// "sessionid must be provided", 400)): a legacy HTTP+SSE server.
		return bytes.Equal(bytes.TrimSpace(ex.BodyHead), []byte("sessionid must be provided"))
	}
	return false
}

// modernErrorCode reports whether body is a JSON-RPC error answer with one of
// the modern error codes (header mismatch, missing client capabilities,
// unsupported protocol version).
func modernErrorCode(body []byte) bool {
	var msg struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Error == nil {
		return false
	}
	return msg.Error.Code >= modernCodeFirst && msg.Error.Code <= modernCodeLast
}
