package check

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"plug.directory/prober/data"
)

// TestProtocolSupport proves the protocol facts against real go-sdk servers
// of each kind (and raw ones for what go-sdk does not answer): the
// versions server/discover lists, the version and transport negotiated,
// whether a session was kept and how the answers came, each learned from
// exactly the requests of a plain check of that server (rule N4's flow, as
// the server received it).
func TestProtocolSupport(t *testing.T) {
	t.Parallel()
	only := func(v ...string) *mcp.ServerOptions { return &mcp.ServerOptions{SupportedProtocolVersions: v} }
	mixed := legacyMux("2025-11-25", "alpha")
	mixed["tools/list"] = func(w http.ResponseWriter, _ *http.Request, m rpcRequest) {
		writeSSE(w, rpcResponse(m.ID, map[string]any{"tools": toolList("alpha")}, nil))
	}
	future := legacyMux("2025-11-25", "alpha")
	future["server/discover"] = func(w http.ResponseWriter, _ *http.Request, m rpcRequest) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(rpcResponse(m.ID, nil, map[string]any{"code": mcp.CodeUnsupportedProtocolVersion, "message": "unsupported",
			"data": map[string]any{"supported": []string{"2027-03-01", "2025-11-25"}, "requested": "2026-07-28"}}))
	}
	discoverThenTools := []string{"POST server/discover", "POST tools/list"}
	fallback := []string{"POST server/discover", "POST initialize", "POST notifications/initialized", "POST tools/list"}
	tests := []struct {
		name         string
		handler      http.Handler
		opts         serverOpts
		known        string // protocol learned before; "" for a first check
		want         []string
		wantVersions []string // nil: no listing
		wantProto    string
		wantTrans    string
		wantSession  bool
		wantAnswers  string
	}{
		{name: "N4_2026_stateless_event_streams", handler: streamableHandler(sdkServer(nil, "alpha"), true, false),
			want: discoverThenTools, wantVersions: mcp.SupportedProtocolVersions(), wantProto: "2026-07-28", wantTrans: data.TransportStreamable,
			wantAnswers: data.AnswersSSE},
		{name: "N4_2026_stateless_json", handler: streamableHandler(sdkServer(nil, "alpha"), true, true),
			want: discoverThenTools, wantVersions: mcp.SupportedProtocolVersions(), wantProto: "2026-07-28", wantTrans: data.TransportStreamable,
			wantAnswers: data.AnswersJSON},
		// A stateful go-sdk handler leaves 2026-07-28 out of its listing
		// (its transport keeps sessions): the check falls back and keeps one.
		{name: "N4_stateful_sdk_handler_lists_only_earlier_versions", handler: streamableHandler(sdkServer(nil, "alpha"), false, false),
			want: fallback, wantVersions: mcp.SupportedProtocolVersions()[1:], wantProto: "2025-11-25", wantTrans: data.TransportStreamable,
			wantSession: true, wantAnswers: data.AnswersSSE},
		{name: "N4_2026_known_era_still_lists", handler: streamableHandler(sdkServer(only("2026-07-28"), "alpha"), true, true), known: "2026-07-28",
			want: discoverThenTools, wantVersions: []string{"2026-07-28"}, wantProto: "2026-07-28", wantTrans: data.TransportStreamable,
			wantAnswers: data.AnswersJSON},
		{name: "N4_2025_11_25_session_discover_refused_with_versions", handler: streamableHandler(sdkServer(only("2025-11-25"), "alpha"), false, true),
			want: fallback, wantVersions: []string{"2025-11-25"}, wantProto: "2025-11-25", wantTrans: data.TransportStreamable,
			wantSession: true, wantAnswers: data.AnswersJSON},
		{name: "N4_2025_11_25_known_era_no_discover", handler: streamableHandler(sdkServer(only("2025-11-25"), "alpha"), false, false), known: "2025-11-25",
			want: fallback[1:], wantProto: "2025-11-25", wantTrans: data.TransportStreamable, wantSession: true, wantAnswers: data.AnswersSSE},
		{name: "N4_2025_06_18_stateless_no_session", handler: streamableHandler(sdkServer(only("2025-06-18"), "alpha"), true, true), known: "2025-06-18",
			want: fallback[1:], wantProto: "2025-06-18", wantTrans: data.TransportStreamable, wantAnswers: data.AnswersJSON},
		{name: "N4_2024_11_05_legacy_sse_session", handler: sseHandler(sdkServer(nil, "alpha")), opts: serverOpts{legacySSE: true},
			want:      []string{"POST server/discover", "GET", "POST initialize", "POST notifications/initialized", "POST tools/list"},
			wantProto: "2024-11-05", wantTrans: data.TransportSSE, wantSession: true, wantAnswers: data.AnswersSSE},
		{name: "N4_json_and_event_stream_mixed", handler: mixed, want: fallback, wantProto: "2025-11-25", wantTrans: data.TransportStreamable,
			wantAnswers: data.AnswersMixed},
		{name: "N4_discover_lists_only_a_future_version", handler: future, want: fallback, wantVersions: []string{"2027-03-01", "2025-11-25"},
			wantProto: "2025-11-25", wantTrans: data.TransportStreamable, wantAnswers: data.AnswersJSON},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := startFlowServer(t, tc.handler, tc.opts)
			tg := srv.target()
			tg.Protocol = tc.known
			res, rec := newTestChecker(t, srv.Lab, 0).Check(context.Background(), tg)
			if res.Status != data.Working {
				t.Fatalf("status %s (%s), want working; transcript:\n%s", res.Status, res.Detail, transcriptText(rec))
			}
			srv.rec.wantSequence(t, tc.want...) // not one request more than the plain check
			if res.Requests != len(tc.want) || res.Protocol != tc.wantProto || res.Transport != tc.wantTrans {
				t.Errorf("%d requests, %q over %q; want %d, %q over %q", res.Requests, res.Protocol, res.Transport, len(tc.want), tc.wantProto, tc.wantTrans)
			}
			p := res.Support
			if p == nil || p.Session == nil {
				t.Fatalf("support %+v: want a session fact after a handshake", p)
			}
			if !slices.Equal(p.Versions, tc.wantVersions) || *p.Session != tc.wantSession || p.Answers != tc.wantAnswers {
				t.Errorf("versions %q, session %v, answers %q; want %q, %v, %q; transcript:\n%s",
					p.Versions, *p.Session, p.Answers, tc.wantVersions, tc.wantSession, tc.wantAnswers, transcriptText(rec))
			}
		})
	}
	t.Run("O_no_answer_no_support", func(t *testing.T) {
		t.Parallel()
		srv := startFlowServer(t, answerWith(http.StatusInternalServerError, "down"), serverOpts{})
		res, _ := newTestChecker(t, srv.Lab, 0).Check(context.Background(), srv.target())
		if res.Status != data.Failing || res.Support != nil {
			t.Errorf("%s %q, support %+v; want failing and nothing learned", res.Status, res.Detail, res.Support)
		}
	})
}
