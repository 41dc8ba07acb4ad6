package check

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"plug.directory/prober/data"
)

// refusesInitialize answers every initialize as @mastra/mcp 2.x (the
// TypeScript SDK v2 server) and mcp-use with legacy rejected do: HTTP 400,
// JSON-RPC -32022 naming only the versions it speaks; everything else goes
// to next.
func refusesInitialize(next http.Handler, status int, supported ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m rpcRequest
		if json.Unmarshal(body, &m) == nil && m.Method == "initialize" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			errObj := map[string]any{"code": -32022, "message": "Unsupported protocol version: 2025-11-25"}
			if supported != nil {
				errObj["data"] = map[string]any{"supported": supported, "requested": "2025-11-25"}
			}
			w.Write(rpcResponse(m.ID, nil, errObj))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// TestProtocolUpgrade proves issue 17 point 1 (rule N4) at the server: a
// server learned at the initialize era that moved to 2026-07-28 only
// (initialize refused with -32022) is asked server/discover in the same
// check, within the request budget, and is working at the new version,
// which the state then learns; one that went back from discover to
// initialize only keeps working as before.
func TestProtocolUpgrade(t *testing.T) {
	t.Parallel()
	modernOnly := func() *mcp.Server {
		return sdkServer(&mcp.ServerOptions{SupportedProtocolVersions: []string{protocolModern}}, "alpha", "beta")
	}
	tests := []struct {
		name      string
		handler   http.Handler
		protocol  string // learned before
		want      []string
		wantProto string
	}{
		{
			name:     "N4_learned_initialize_server_moved_to_2026_07_28",
			handler:  refusesInitialize(streamableHandler(modernOnly(), true, false), http.StatusBadRequest, protocolModern),
			protocol: protocolLegacy, want: []string{"POST initialize", "POST server/discover", "POST tools/list"},
			wantProto: protocolModern,
		},
		{
			name:     "N4_learned_initialize_server_refusing_it_without_naming_versions",
			handler:  refusesInitialize(streamableHandler(modernOnly(), true, false), http.StatusOK),
			protocol: "2025-06-18", want: []string{"POST initialize", "POST server/discover", "POST tools/list"},
			wantProto: protocolModern,
		},
		{
			name:     "N4_learned_discover_server_back_to_initialize_only",
			handler:  legacyMux(protocolLegacy, "alpha", "beta"),
			protocol: protocolModern, want: []string{"POST server/discover", "POST initialize", "POST notifications/initialized", "POST tools/list"},
			wantProto: protocolLegacy,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := startFlowServer(t, tc.handler, serverOpts{})
			tg := srv.target()
			tg.Protocol, tg.Transport = tc.protocol, data.TransportStreamable
			res, rec := newTestChecker(t, srv.Lab, 0).Check(context.Background(), tg)
			if res.Status != data.Working {
				t.Fatalf("status %s (%s), want working; transcript:\n%s", res.Status, res.Detail, transcriptText(rec))
			}
			srv.rec.wantSequence(t, tc.want...)
			if res.Protocol != tc.wantProto || res.Requests != len(tc.want) {
				t.Errorf("learned %q in %d requests; want %q in %d", res.Protocol, res.Requests, tc.wantProto, len(tc.want))
			}
		})
	}
}
