package check

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"plug.directory/prober/data"
)

// TestInterop proves rule N4's fallback against small raw servers that
// answer as the other SDKs do (most of the directory is built on them, and
// they predate server/discover):
//
//   - TypeScript (stateful StreamableHTTPServerTransport, as in its Express
//     example): a request without a session that is not initialize gets
//     HTTP 400 with JSON-RPC error -32000 and id null; answers are event
//     streams; the session id comes with the initialize answer.
//   - TypeScript (stateless): the Mcp-Protocol-Version header is checked
//     first, and 2026-07-28 is unknown: HTTP 400, -32000.
//   - Python (StreamableHTTPSessionManager): stateful, HTTP 400 "Bad Request:
//     Missing session ID" with id "server-error" and -32600; stateless, the
//     same 400 for the unknown Mcp-Protocol-Version; both need both media
//     types in Accept (406 otherwise) and answer with event streams (CRLF).
//   - mcp-go: HTTP 200 with a JSON-RPC -32601 "method not found".
//   - Python legacy SSE (FastMCP sse_app): POST /sse is 405; the stream's
//     endpoint is /messages/?session_id=...
//   - TypeScript legacy SSE (Express): POST /sse is a 404 HTML page.
func TestInterop(t *testing.T) {
	t.Parallel()
	full := []string{"POST server/discover", "POST initialize", "POST notifications/initialized", "POST tools/list"}
	// A legacy server's first check: its stream address answers discover's
	// POST 404 or 405 without JSON-RPC, so the check goes straight to the
	// GET: 5 requests (it was 6, an initialize answered the same 404 first).
	legacy := []string{"POST server/discover", "GET", "POST initialize", "POST notifications/initialized", "POST tools/list"}
	tests := []struct {
		name      string
		handler   http.Handler
		path      string
		legacySSE bool
		want      []string
		protocol  string
		transport string
	}{
		{name: "N4_typescript_stateful", handler: tsServer(true), path: "/mcp", want: full, protocol: "2025-06-18", transport: data.TransportStreamable},
		{name: "N4_typescript_stateless", handler: tsServer(false), path: "/mcp", want: full, protocol: "2025-06-18", transport: data.TransportStreamable},
		{name: "N4_python_stateful", handler: pythonServer(false), path: "/mcp", want: full, protocol: "2025-03-26", transport: data.TransportStreamable},
		{name: "N4_python_stateless", handler: pythonServer(true), path: "/mcp", want: full, protocol: "2025-03-26", transport: data.TransportStreamable},
		{name: "N4_mcp_go", handler: mcpGoServer(), path: "/mcp", want: full, protocol: "2025-06-18", transport: data.TransportStreamable},
		{
			name: "N4_python_legacy_sse", path: "/sse", legacySSE: true, want: legacy, protocol: "2024-11-05", transport: data.TransportSSE,
			handler: newLegacySSEServer("/sse", "/messages/", answerWith(405, "Method Not Allowed", "Content-Type", "text/plain"), legacyMux("2024-11-05", "alpha", "beta")),
		},
		{
			name: "N4_typescript_legacy_sse", path: "/sse", legacySSE: true, want: legacy, protocol: "2024-11-05", transport: data.TransportSSE,
			handler: newLegacySSEServer("/sse", "/messages", answerWith(404, "<!DOCTYPE html><html><body><pre>Cannot POST /sse</pre></body></html>", "Content-Type", "text/html; charset=utf-8"), legacyMux("2024-11-05", "alpha", "beta")),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := startFlowServer(t, tc.handler, serverOpts{legacySSE: tc.legacySSE})
			tg := Target{ID: "srv", URL: srv.URL + tc.path}
			res, rec := newTestChecker(t, srv.Lab, 0).Check(context.Background(), tg)
			if res.Status != data.Working || !slices.Equal(res.Tools, []string{"alpha", "beta"}) {
				t.Fatalf("concluded %s %q tools %q, want working with alpha, beta; transcript:\n%s", res.Status, res.Detail, res.Tools, transcriptText(rec))
			}
			srv.rec.wantSequence(t, tc.want...)
			if res.Protocol != tc.protocol || res.Transport != tc.transport {
				t.Errorf("learned %q over %q, want %q over %q", res.Protocol, res.Transport, tc.protocol, tc.transport)
			}
			// The next check goes straight to the learned flow.
			tg.Protocol, tg.Transport = res.Protocol, res.Transport
			before := len(srv.rec.requests())
			res2, rec2 := newTestChecker(t, srv.Lab, 0).Check(context.Background(), tg)
			if res2.Status != data.Working {
				t.Fatalf("second check %s %q; transcript:\n%s", res2.Status, res2.Detail, transcriptText(rec2))
			}
			second := srv.rec.requests()[before:]
			want := []string{"POST initialize", "POST notifications/initialized", "POST tools/list"}
			if tc.transport == data.TransportSSE {
				want = append([]string{"GET"}, want...)
			}
			if !slices.Equal(second, want) {
				t.Errorf("second check sent %q, want %q", second, want)
			}
		})
	}
}

// tsServer answers as the TypeScript SDK's Streamable HTTP transport.
func tsServer(stateful bool) http.Handler {
	mux := legacyMux("2025-06-18", "alpha", "beta")
	const session = "3f2a9c1e-ts"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeRPCErrorStatus(w, http.StatusMethodNotAllowed, json.RawMessage("null"), -32000, "Method not allowed.")
			return
		}
		accept := r.Header.Get("Accept")
		if !strings.Contains(accept, "application/json") || !strings.Contains(accept, "text/event-stream") {
			writeRPCErrorStatus(w, http.StatusNotAcceptable, json.RawMessage("null"), -32000, "Not Acceptable: Client must accept both application/json and text/event-stream")
			return
		}
		var m rpcRequest
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			writeRPCErrorStatus(w, http.StatusBadRequest, json.RawMessage("null"), -32700, "Parse error")
			return
		}
		if m.Method != "initialize" {
			if stateful && r.Header.Get("Mcp-Session-Id") != session {
				writeRPCErrorStatus(w, http.StatusBadRequest, json.RawMessage("null"), -32000, "Bad Request: No valid session ID provided")
				return
			}
			if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !slices.Contains([]string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"}, v) {
				writeRPCErrorStatus(w, http.StatusBadRequest, json.RawMessage("null"), -32000,
					fmt.Sprintf("Bad Request: Unsupported protocol version: %s (supported versions: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05, 2024-10-07)", v))
				return
			}
		}
		if m.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if stateful && m.Method == "initialize" {
			w.Header().Set("Mcp-Session-Id", session)
		}
		rw := &bufferedAnswer{header: http.Header{}}
		mux[m.Method](rw, r, m)
		writeSSE(w, []byte(strings.TrimSpace(rw.body.String())))
	})
}

// pythonServer answers as the Python SDK's StreamableHTTPSessionManager
// with event-stream answers: stateful (a session id from initialize on), or
// stateless (the Mcp-Protocol-Version header checked first).
func pythonServer(stateless bool) http.Handler {
	mux := legacyMux("2025-03-26", "alpha", "beta")
	const session = "9b1c0d7f4e2a4c5e8f6a1b2c3d4e5f60"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accept := r.Header.Get("Accept")
		if !strings.Contains(accept, "application/json") || !strings.Contains(accept, "text/event-stream") {
			writeRPCErrorStatus(w, http.StatusNotAcceptable, json.RawMessage(`"server-error"`), -32600, "Not Acceptable: Client must accept both application/json and text/event-stream")
			return
		}
		var m rpcRequest
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			writeRPCErrorStatus(w, http.StatusBadRequest, json.RawMessage(`"server-error"`), -32700, "Parse error")
			return
		}
		if v := r.Header.Get("Mcp-Protocol-Version"); stateless && v != "" && !slices.Contains([]string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}, v) {
			writeRPCErrorStatus(w, http.StatusBadRequest, json.RawMessage(`"server-error"`), -32600,
				"Bad Request: Unsupported protocol version: "+v+". Supported versions: 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25")
			return
		}
		if !stateless && m.Method != "initialize" && r.Header.Get("Mcp-Session-Id") == "" {
			writeRPCErrorStatus(w, http.StatusBadRequest, json.RawMessage(`"server-error"`), -32600, "Bad Request: Missing session ID")
			return
		}
		if m.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if !stateless && m.Method == "initialize" {
			w.Header().Set("Mcp-Session-Id", session)
		}
		rw := &bufferedAnswer{header: http.Header{}}
		mux[m.Method](rw, r, m)
		writeSSE(w, []byte(strings.TrimSpace(rw.body.String())))
	})
}

// mcpGoServer answers as mcp-go's StreamableHTTPServer: JSON answers, and a
// 200 with -32601 for a method it does not know.
func mcpGoServer() http.Handler {
	return legacyMux("2025-06-18", "alpha", "beta")
}

// TestToolsPagination proves the bounded tools/list of the notes: several
// pages are all read; a server repeating its cursor, or never ending, is
// asked at most maxToolPages times.
func TestToolsPagination(t *testing.T) {
	t.Parallel()
	t.Run("N4_several_pages_go_sdk", func(t *testing.T) {
		t.Parallel()
		s := sdkServer(&mcp.ServerOptions{PageSize: 2}, "t1", "t2", "t3", "t4", "t5")
		srv := startFlowServer(t, streamableHandler(s, true, false), serverOpts{})
		res, rec := newTestChecker(t, srv.Lab, 0).Check(context.Background(), srv.target())
		if res.Status != data.Working || res.Detail != "5 tools" || !slices.Equal(res.Tools, []string{"t1", "t2", "t3", "t4", "t5"}) {
			t.Fatalf("concluded %s %q %q; transcript:\n%s", res.Status, res.Detail, res.Tools, transcriptText(rec))
		}
		srv.rec.wantSequence(t, "POST server/discover", "POST tools/list", "POST tools/list", "POST tools/list")
	})
	pager := func(next func(cursor string) string) rpcMux {
		m := legacyMux("2025-06-18")
		m["tools/list"] = func(w http.ResponseWriter, _ *http.Request, req rpcRequest) {
			var p struct {
				Cursor string `json:"cursor"`
			}
			json.Unmarshal(req.Params, &p)
			writeResult(w, req.ID, map[string]any{"tools": toolList("tool" + p.Cursor), "nextCursor": next(p.Cursor)})
		}
		return m
	}
	tests := []struct {
		name   string
		next   func(cursor string) string
		detail string
		pages  int
	}{
		{name: "N4_cursor_repeated_forever", next: func(string) string { return "same" }, detail: "2 tools (server repeated a cursor)", pages: 2},
		{name: "N4_pages_never_end", next: func(c string) string { return c + "x" }, detail: "10 tools (first 10 pages)", pages: maxToolPages},
	}
	t.Run("N4_pages_over_streams_left_open", func(t *testing.T) {
		t.Parallel()
		// Each page is an event stream the server keeps open after the
		// answer; the SDK stops reading it, and the next page still goes.
		m := legacyMux("2025-06-18")
		m["tools/list"] = func(w http.ResponseWriter, r *http.Request, req rpcRequest) {
			var p struct {
				Cursor string `json:"cursor"`
			}
			json.Unmarshal(req.Params, &p)
			next := map[string]string{"": "p2", "p2": "p3", "p3": ""}[p.Cursor]
			writeSSE(w, rpcResponse(req.ID, map[string]any{"tools": toolList("tool" + p.Cursor), "nextCursor": next}, nil))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
		srv := startFlowServer(t, m, serverOpts{})
		res, rec := newTestChecker(t, srv.Lab, 0).Check(context.Background(), srv.target())
		if res.Status != data.Working || res.Detail != "3 tools" {
			t.Fatalf("concluded %s %q; transcript:\n%s", res.Status, res.Detail, transcriptText(rec))
		}
		srv.rec.wantSequence(t, "POST server/discover", "POST initialize", "POST notifications/initialized", "POST tools/list", "POST tools/list", "POST tools/list")
	})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := startFlowServer(t, pager(tc.next), serverOpts{})
			res, rec := newTestChecker(t, srv.Lab, 0).Check(context.Background(), srv.target())
			if res.Status != data.Working || res.Detail != tc.detail || res.ToolCount != tc.pages {
				t.Fatalf("concluded %s %q (%d tools), want working %q; transcript:\n%s", res.Status, res.Detail, res.ToolCount, tc.detail, transcriptText(rec))
			}
			want := []string{"POST server/discover", "POST initialize", "POST notifications/initialized"}
			for range tc.pages {
				want = append(want, "POST tools/list")
			}
			srv.rec.wantSequence(t, want...)
		})
	}
}
