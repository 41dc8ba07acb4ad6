package check

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
)

// TestFlows proves rule N4 against real go-sdk servers over TLS: each era
// gets exactly its flow, unknown eras fall back as the MCP specification
// says, and what was learned sends later checks straight to the right flow.
func TestFlows(t *testing.T) {
	t.Parallel()
	modern := func() *mcp.Server { return sdkServer(nil, "alpha", "beta") }
	only := func(v string) func() *mcp.Server {
		return func() *mcp.Server {
			return sdkServer(&mcp.ServerOptions{SupportedProtocolVersions: []string{v}}, "alpha", "beta")
		}
	}
	tests := []struct {
		name      string
		handler   func() *mcp.Server
		serve     func(*mcp.Server) *flowServer
		protocol  string // learned before
		transport string // learned before
		want      []string
		wantProto string
		wantTrans string
	}{
		{
			name: "N4_2026_stateless_unknown_era", handler: modern,
			want:      []string{"POST server/discover", "POST tools/list"},
			wantProto: "2026-07-28", wantTrans: data.TransportStreamable,
		},
		{
			name: "N4_2026_stateless_known_era", handler: modern, protocol: "2026-07-28", transport: data.TransportStreamable,
			want:      []string{"POST server/discover", "POST tools/list"},
			wantProto: "2026-07-28", wantTrans: data.TransportStreamable,
		},
		{
			name: "N4_2025_11_25_unknown_era_falls_back", handler: only("2025-11-25"),
			want:      []string{"POST server/discover", "POST initialize", "POST notifications/initialized", "POST tools/list"},
			wantProto: "2025-11-25", wantTrans: data.TransportStreamable,
		},
		{
			name: "N4_2025_11_25_known_era", handler: only("2025-11-25"), protocol: "2025-11-25", transport: data.TransportStreamable,
			want:      []string{"POST initialize", "POST notifications/initialized", "POST tools/list"},
			wantProto: "2025-11-25", wantTrans: data.TransportStreamable,
		},
		{
			name: "N4_2025_06_18_unknown_era_falls_back", handler: only("2025-06-18"),
			want:      []string{"POST server/discover", "POST initialize", "POST notifications/initialized", "POST tools/list"},
			wantProto: "2025-06-18", wantTrans: data.TransportStreamable,
		},
		{
			name: "N4_2025_06_18_known_era", handler: only("2025-06-18"), protocol: "2025-06-18", transport: data.TransportStreamable,
			want:      []string{"POST initialize", "POST notifications/initialized", "POST tools/list"},
			wantProto: "2025-06-18", wantTrans: data.TransportStreamable,
		},
		{
			name: "N4_2024_11_05_legacy_sse_unknown_era_falls_back", handler: modern,
			serve: func(s *mcp.Server) *flowServer {
				return startFlowServer(t, sseHandler(s), serverOpts{legacySSE: true})
			},
			// go-sdk's SSEHandler answers the discover POST "sessionid must
			// be provided" (400): the address takes no POSTs, so the GET
			// comes next and the first check costs 5 requests, not 6.
			want:      []string{"POST server/discover", "GET", "POST initialize", "POST notifications/initialized", "POST tools/list"},
			wantProto: "2024-11-05", wantTrans: data.TransportSSE,
		},
		{
			name: "N4_2024_11_05_legacy_sse_known", handler: modern, protocol: "2024-11-05", transport: data.TransportSSE,
			serve: func(s *mcp.Server) *flowServer {
				return startFlowServer(t, sseHandler(s), serverOpts{legacySSE: true})
			},
			want:      []string{"GET", "POST initialize", "POST notifications/initialized", "POST tools/list"},
			wantProto: "2024-11-05", wantTrans: data.TransportSSE,
		},
		{
			name: "N4_sse_learned_but_server_moved_to_streamable", handler: only("2025-11-25"), protocol: "2024-11-05", transport: data.TransportSSE,
			serve: func(s *mcp.Server) *flowServer {
				return startFlowServer(t, streamableHandler(s, false, false), serverOpts{legacySSE: true})
			},
			want:      []string{"GET", "POST server/discover", "POST initialize", "POST notifications/initialized", "POST tools/list"},
			wantProto: "2025-11-25", wantTrans: data.TransportStreamable,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := tc.handler()
			var srv *flowServer
			if tc.serve != nil {
				srv = tc.serve(s)
			} else {
				srv = startFlowServer(t, streamableHandler(s, tc.wantProto >= "2026", false), serverOpts{})
			}
			tg := srv.target()
			tg.Protocol, tg.Transport = tc.protocol, tc.transport
			res, rec := newTestChecker(t, srv.Lab, 0).Check(context.Background(), tg)
			if res.Status != data.Working {
				t.Fatalf("status %s (%s), want working; transcript:\n%s", res.Status, res.Detail, transcriptText(rec))
			}
			srv.rec.wantSequence(t, tc.want...)
			if res.Protocol != tc.wantProto || res.Transport != tc.wantTrans {
				t.Errorf("learned %q over %q, want %q over %q", res.Protocol, res.Transport, tc.wantProto, tc.wantTrans)
			}
			if !slices.Equal(res.Tools, []string{"alpha", "beta"}) || res.ToolCount != 2 || res.Detail != "2 tools" {
				t.Errorf("tools %q count %d detail %q, want alpha, beta", res.Tools, res.ToolCount, res.Detail)
			}
			if res.ServerName != "test-server" || res.ServerVersion != "1.2.3" {
				t.Errorf("server %q %q, want test-server 1.2.3", res.ServerName, res.ServerVersion)
			}
			if res.ServerTitle != "Test <Server>" || res.ServerDescription != "Serves the tests." || res.ServerWebsite != "https://test.example/docs" {
				t.Errorf("server says of itself %q, %q, %q; want its title, description and website", res.ServerTitle, res.ServerDescription, res.ServerWebsite)
			}
			if res.Requests != len(tc.want) {
				t.Errorf("requests %d, want %d", res.Requests, len(tc.want))
			}
			// A stateful session simply ends (rule N2): the SDK's DELETE on
			// Close was refused by the guard, and the recorder proves it
			// never arrived.
			stateful := tc.wantTrans == data.TransportStreamable && tc.wantProto < "2026"
			deleted := slices.ContainsFunc(rec.Exchanges, func(ex Exchange) bool {
				return ex.Method == http.MethodDelete && ex.Blocked != "" && ex.Status == 0
			})
			if stateful && !deleted {
				t.Errorf("no refused DELETE in the transcript of a stateful session:\n%s", transcriptText(rec))
			}
		})
	}
}

// TestSourceAddress proves rule N11 end to end: every connection of a check
// leaves from the configured source address.
func TestSourceAddress(t *testing.T) {
	t.Parallel()
	srv := startFlowServer(t, legacyMux("2025-06-18", "a"), serverOpts{})
	source := netip.AddrFrom4([4]byte{127, 0, 0, byte(2 + rand.IntN(250))})
	c := newTestChecker(t, srv.Lab, 0, func(cfg *Config) { cfg.SourceAddr = source })
	res, rec := c.Check(context.Background(), srv.target())
	if res.Status != data.Working {
		t.Fatalf("concluded %s %q; transcript:\n%s", res.Status, res.Detail, transcriptText(rec))
	}
	srv.rec.mu.Lock()
	defer srv.rec.mu.Unlock()
	for i, remote := range srv.rec.remote {
		if ap := netip.MustParseAddrPort(remote); ap.Addr() != source {
			t.Errorf("request %d came from %s, want %s", i, ap.Addr(), source)
		}
	}
}

// TestHeaders proves rules N1 and N5 at the server: the exact User-Agent of
// the build on every request, and the Streamable HTTP headers the flows
// need, with no credential.
func TestHeaders(t *testing.T) {
	t.Parallel()
	srv := startFlowServer(t, streamableHandler(sdkServer(nil, "a"), true, false), serverOpts{})
	res, _ := newTestChecker(t, srv.Lab, 0).Check(context.Background(), srv.target())
	if res.Status != data.Working {
		t.Fatalf("concluded %s %q", res.Status, res.Detail)
	}
	for i := range srv.rec.requests() {
		h := srv.rec.header(i)
		if got, want := h.Get("User-Agent"), fmt.Sprintf(data.UserAgentFormat, data.Version()); got != want {
			t.Errorf("request %d: User-Agent %q, want %q", i, got, want)
		}
		if got := h.Get("Mcp-Protocol-Version"); got != "2026-07-28" {
			t.Errorf("request %d: Mcp-Protocol-Version %q, want 2026-07-28", i, got)
		}
		if got := h.Get("Accept"); got != "application/json, text/event-stream" {
			t.Errorf("request %d: Accept %q", i, got)
		}
	}
}

// TestResultFields proves a check, stamped as the runner and run -url do
// (data.Result.Stamp), fills every field of data.Result (table O's "each
// result also keeps ..."), with the injected clock.
func TestResultFields(t *testing.T) {
	t.Parallel()
	srv := startFlowServer(t, legacyMux("2025-06-18", "a", "b"), serverOpts{})
	start := time.Date(2026, 12, 2, 10, 0, 3, 0, time.UTC)
	clock := start
	var mu sync.Mutex
	now := func() time.Time { // each reading a millisecond later
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Millisecond)
		return clock
	}
	c := newTestChecker(t, srv.Lab, 0, func(cfg *Config) { cfg.Now = now })
	tg := srv.target()
	planned := data.PlannedCheck{ID: tg.ID, URL: tg.URL, Host: data.HostOf(tg.URL), Reason: data.ReasonRoutine, At: start.Add(-2 * time.Second)}
	started := now()
	res, rec := c.Check(context.Background(), tg)
	res.Stamp(planned, started, now(), 0)
	want := data.Result{
		ID: "srv", URL: srv.URL + "/mcp", Host: "mcp.test", Reason: data.ReasonRoutine,
		Status: data.Working, Detail: "2 tools", HTTPStatus: 200,
		Protocol: "2025-06-18", Transport: data.TransportStreamable, ServerName: "raw-server", ServerVersion: "0.9",
		ToolCount: 2, Tools: []string{"a", "b"},
		ToolProblems: []data.ToolProblem{ // toolList's tools have no description
			{Tool: "a", Rule: data.ToolRuleNoDescription, Message: "no description: a model cannot tell when to use it"},
			{Tool: "b", Rule: data.ToolRuleNoDescription, Message: "no description: a model cannot tell when to use it"},
		},
		Planned: planned.At, Started: start.Add(time.Millisecond), Lateness: 2*time.Second + time.Millisecond,
		Requests: 4, Conns: 1, BytesRead: rec.BytesRead, ProberVersion: data.Version(),
		// How it spoke: discover answered "method not found" (no
		// listing), no Mcp-Session-Id, JSON answers (TestProtocolSupport)
		Support: &data.ProtocolSupport{Session: new(false), Answers: data.AnswersJSON},
	}
	want.Finished, want.Duration = res.Finished, res.Finished.Sub(want.Started)
	if res.TLS == nil || res.Timings == nil {
		t.Errorf("TLS %+v, timings %+v: want both (TestFacts holds them to the server)", res.TLS, res.Timings)
	}
	want.TLS, want.Timings = res.TLS, res.Timings
	want.ToolsHash, want.ToolDefs = spool.FingerprintTools([]spool.ToolDef{
		{Name: "a", InputSchema: json.RawMessage(`{"type":"object"}`)}, {Name: "b", InputSchema: json.RawMessage(`{"type":"object"}`)}})
	if !reflect.DeepEqual(res, want) {
		t.Errorf("result\n  %+v\nwant\n  %+v", res, want)
	}
	if res.BytesRead == 0 || !res.Finished.After(res.Started) {
		t.Errorf("bytes %d, finished %v after started %v", res.BytesRead, res.Finished, res.Started)
	}
}

// TestOneConnectionPerCheck proves a performance goal: all
// requests of a check share one TCP connection, whether the server offers
// HTTP/2 or not (the guard speaks HTTP/1.1 only); only the legacy SSE flow
// needs a second (its GET holds the first one open while the posts go).
func TestOneConnectionPerCheck(t *testing.T) {
	t.Parallel()
	only := func(v string) *mcp.Server {
		return sdkServer(&mcp.ServerOptions{SupportedProtocolVersions: []string{v}}, "a")
	}
	tests := []struct {
		name    string
		handler http.Handler
		opts    serverOpts
		path    string
		conns   int
	}{
		{"2026_h2", streamableHandler(sdkServer(nil, "a"), true, false), serverOpts{}, "/mcp", 1},
		{"2026_h1", streamableHandler(sdkServer(nil, "a"), true, false), serverOpts{http1: true}, "/mcp", 1},
		{"2025_11_25_unknown_era_h1", streamableHandler(only("2025-11-25"), false, false), serverOpts{http1: true}, "/mcp", 1},
		{"2025_06_18_json_h1", streamableHandler(only("2025-06-18"), false, true), serverOpts{http1: true}, "/mcp", 1},
		{"2025_11_25_known_era_h1", streamableHandler(only("2025-11-25"), false, false), serverOpts{http1: true}, "/mcp#2025-11-25", 1},
		{"sse_unknown_era_h2", sseHandler(sdkServer(nil, "a")), serverOpts{legacySSE: true}, "/sse", 2},
		{"sse_unknown_era_h1", sseHandler(sdkServer(nil, "a")), serverOpts{legacySSE: true, http1: true}, "/sse", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := startFlowServer(t, tc.handler, tc.opts)
			c := newTestChecker(t, srv.Lab, 0)
			path, protocol, _ := strings.Cut(tc.path, "#")
			tg := Target{ID: "srv", URL: srv.URL + path, Protocol: protocol}
			for range 10 {
				res, rec := c.Check(context.Background(), tg)
				if res.Status != data.Working || res.Conns != tc.conns {
					t.Fatalf("concluded %s %q with %d connections, want working with %d; transcript:\n%s",
						res.Status, res.Detail, res.Conns, tc.conns, transcriptText(rec))
				}
			}
		})
	}
}
