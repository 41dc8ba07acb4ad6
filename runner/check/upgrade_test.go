package check

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"plug.directory/prober/data"
)

// refusesInitialize answers every initialize that asks a version outside
// supported as @mastra/mcp 2.x (the TypeScript SDK v2 server) and mcp-use
// with legacy rejected do: the status, JSON-RPC -32022 naming only the
// versions it speaks; everything else goes to next.
func refusesInitialize(next http.Handler, status int, supported ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m rpcRequest
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method == "initialize" && (json.Unmarshal(m.Params, &p) != nil || !slices.Contains(supported, p.ProtocolVersion)) {
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

// TestProtocolUpgrade (rule N4), at the server: a
// server learned at the initialize era that moved to 2026-07-28 only
// (initialize refused with -32022) is asked server/discover in the same
// check, within the request budget, and is working at the new version,
// which the state then learns; one whose -32022 names an older version is
// asked initialize with it; one that refuses discover too is failing after
// two requests, the SDK's fallback initialize held back; one that went back
// from discover to initialize only keeps working as before.
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
		status    data.Outcome // "" means working
		detail    string       // checked when status is set
		next      []string     // when set: what the next check, from the state this one leaves, sends
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
			name:     "N4_learned_initialize_server_naming_an_older_version",
			handler:  refusesInitialize(legacyMux("2025-06-18", "alpha"), http.StatusBadRequest, "2025-06-18"),
			protocol: "2025-06-18", want: []string{"POST initialize", "POST initialize", "POST notifications/initialized", "POST tools/list"},
			wantProto: "2025-06-18",
		},
		{
			name: "N4_learned_initialize_server_refusing_discover_too",
			handler: refusesInitialize(rpcMux{"server/discover": func(w http.ResponseWriter, _ *http.Request, m rpcRequest) {
				writeRPCErrorStatus(w, http.StatusBadRequest, m.ID, -32600, "invalid request")
			}}, http.StatusBadRequest, protocolModern),
			protocol: protocolLegacy, want: []string{"POST initialize", "POST server/discover"},
			status: data.Failing, detail: "HTTP 400, error -32600",
		},
		{
			// go-sdk v1.8.0 restricted to 2026-07-28 answers the initialize
			// of 2025-11-25 with 200 and that version, then refuses the
			// notification's Mcp-Protocol-Version with 400 "Unsupported
			// protocol version (supported versions: 2026-07-28)".
			name:     "N4_learned_initialize_go_sdk_2026_07_28_only_refuses_initialized",
			handler:  streamableHandler(modernOnly(), true, false),
			protocol: protocolLegacy, want: []string{"POST initialize", "POST notifications/initialized", "POST server/discover", "POST tools/list"},
			wantProto: protocolModern, next: []string{"POST server/discover", "POST tools/list"},
		},
		{
			name:     "N4_learned_initialize_tools_list_refused_naming_2026_07_28",
			handler:  refusesToolsListAtOldVersions(streamableHandler(modernOnly(), true, false)),
			protocol: protocolLegacy, want: []string{"POST initialize", "POST notifications/initialized", "POST tools/list", "POST server/discover", "POST tools/list"},
			wantProto: protocolModern, next: []string{"POST server/discover", "POST tools/list"},
		},
		{
			// A refusal that names no version the prober speaks is the
			// server's verdict: nothing more is asked.
			name: "N4_learned_initialize_initialized_refused_naming_no_version",
			handler: func() rpcMux {
				m := legacyMux(protocolLegacy, "alpha")
				m["notifications/initialized"] = func(w http.ResponseWriter, _ *http.Request, _ rpcRequest) {
					http.Error(w, "Bad Request: session expired", http.StatusBadRequest)
				}
				return m
			}(),
			protocol: protocolLegacy, want: []string{"POST initialize", "POST notifications/initialized"},
			status: data.Failing, detail: "HTTP 400",
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
			srv.rec.wantSequence(t, tc.want...)
			if tc.status != "" {
				if res.Status != tc.status || res.Detail != tc.detail || res.Requests != len(tc.want) {
					t.Errorf("%s (%s) in %d requests, want %s (%s) in %d; transcript:\n%s", res.Status, res.Detail, res.Requests, tc.status, tc.detail, len(tc.want), transcriptText(rec))
				}
				return
			}
			if res.Status != data.Working {
				t.Fatalf("status %s (%s), want working; transcript:\n%s", res.Status, res.Detail, transcriptText(rec))
			}
			if res.Protocol != tc.wantProto || res.Requests != len(tc.want) {
				t.Errorf("learned %q in %d requests; want %q in %d", res.Protocol, res.Requests, tc.wantProto, len(tc.want))
			}
			if tc.next == nil {
				return
			}
			// The state learns it, and the plan hands the next check the
			// new version: straight to the modern flow.
			wantNextCheck(t, srv, tg, res, tc.next...)
		})
	}
}

// refusesToolsListAtOldVersions answers an initialize-era flow as a server
// that kept its old handshake in front of a 2026-07-28-only core: initialize
// and its notification are answered (2025-11-25), tools/list at that version
// is refused 400 in go-sdk's words naming 2026-07-28; requests of 2026-07-28
// go to next.
func refusesToolsListAtOldVersions(next http.Handler) http.Handler {
	old := legacyMux(protocolLegacy, "alpha")
	old["tools/list"] = func(w http.ResponseWriter, _ *http.Request, _ rpcRequest) {
		http.Error(w, "Bad Request: Unsupported protocol version (supported versions: 2026-07-28)", http.StatusBadRequest)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= protocolModern {
			next.ServeHTTP(w, r)
			return
		}
		old.ServeHTTP(w, r)
	})
}

// wantNextCheck folds res, the check of tg, into the state tg was planned
// from, as the runner does, and checks again from what the state learned,
// as the next plan hands it: the server must receive exactly want, and the
// check be working.
func wantNextCheck(t *testing.T, srv *flowServer, tg Target, res data.Result, want ...string) {
	t.Helper()
	st := data.State{ID: tg.ID, URL: tg.URL, Protocol: tg.Protocol, Transport: tg.Transport, LastCheck: time.Unix(1, 0)}
	res.ID, res.URL, res.Started = tg.ID, tg.URL, time.Unix(2, 0)
	st.Apply(res)
	before := len(srv.rec.requests())
	tg.Protocol, tg.Transport = st.Protocol, st.Transport
	res2, rec2 := newTestChecker(t, srv.Lab, 0).Check(context.Background(), tg)
	if got := srv.rec.requests()[before:]; res2.Status != data.Working || !slices.Equal(got, want) {
		t.Errorf("next check (state %s over %s): %s %q, server received %q, want working after %q; transcript:\n%s",
			st.Protocol, st.Transport, res2.Status, res2.Detail, got, want, transcriptText(rec2))
	}
}

// standaloneStream answers a GET as a Streamable HTTP server offering the
// specification's standalone stream does (mcp-grafana, brave-search's
// stateless mode): 200 and an event stream that names no endpoint,
// open until the client leaves; with prime, its first event is the empty
// one that primes a reconnect (id and empty data). POSTs go to next.
func standaloneStream(next http.Handler, prime bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if prime {
			io.WriteString(w, "id: 0\ndata: \n\n")
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
}

// TestTransportMove proves rule N4 at the server for a server learned on
// the legacy HTTP+SSE transport that moved to Streamable HTTP at the same
// address, answering the GET with a stream that names no endpoint: the
// check takes that for no legacy server (no endpoint event within
// endpointWait, or a first event that is another), asks the modern flow in
// the same check and is working, and the next check, from the state it
// leaves, goes straight to the new flow. Before, each check waited out its
// whole deadline, or failed "no endpoint event", for ever.
func TestTransportMove(t *testing.T) {
	t.Parallel()
	modern := func() http.Handler { return streamableHandler(sdkServer(nil, "alpha", "beta"), true, false) }
	tests := []struct {
		name      string
		handler   http.Handler
		want      []string
		wantProto string
		next      []string
		slow      bool // the stream stays silent: the check waits endpointWait
	}{
		{
			name: "N4_learned_sse_moved_to_streamable_silent_stream", handler: standaloneStream(modern(), false), slow: true,
			want:      []string{"GET", "POST server/discover", "POST tools/list"},
			wantProto: protocolModern, next: []string{"POST server/discover", "POST tools/list"},
		},
		{
			name: "N4_learned_sse_moved_to_streamable_stream_primed", handler: standaloneStream(modern(), true),
			want:      []string{"GET", "POST server/discover", "POST tools/list"},
			wantProto: protocolModern, next: []string{"POST server/discover", "POST tools/list"},
		},
		{
			name: "N4_learned_sse_moved_to_streamable_of_the_initialize_era", handler: standaloneStream(legacyMux("2025-06-18", "alpha", "beta"), true),
			want:      []string{"GET", "POST server/discover", "POST initialize", "POST notifications/initialized", "POST tools/list"},
			wantProto: "2025-06-18", next: []string{"POST initialize", "POST notifications/initialized", "POST tools/list"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := startFlowServer(t, tc.handler, serverOpts{legacySSE: true, http1: true})
			tg := srv.target()
			tg.Protocol, tg.Transport = protocolSSE, data.TransportSSE
			res, rec := newTestChecker(t, srv.Lab, 0).Check(context.Background(), tg)
			srv.rec.wantSequence(t, tc.want...)
			if res.Status != data.Working || res.Protocol != tc.wantProto || res.Transport != data.TransportStreamable || res.Requests != len(tc.want) {
				t.Fatalf("%s (%s), %q over %q in %d requests; want working, %q over %q in %d; transcript:\n%s",
					res.Status, res.Detail, res.Protocol, res.Transport, res.Requests, tc.wantProto, data.TransportStreamable, len(tc.want), transcriptText(rec))
			}
			if wait := rec.Exchanges[0].Duration; tc.slow != (wait >= endpointWait) || wait > endpointWait+time.Second {
				t.Errorf("the GET's stream was held %v; want endpointWait (%v) for a silent stream, less for a primed one", wait, endpointWait)
			}
			wantNextCheck(t, srv, tg, res, tc.next...)
		})
	}
}
