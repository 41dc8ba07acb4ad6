package check

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/testutil"
)

// TestCrossHost proves that a check talks to one host only, the one the
// planner counted it against (rule S3): a redirect or a legacy-SSE endpoint
// that leads to another host is not followed (not_checkable), and the other
// host, reachable and willing, receives nothing. Another path on the same
// host is followed.
func TestCrossHost(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		handler func(victim *flowServer) http.Handler
		sse     bool // the check's server is a legacy HTTP+SSE one at /sse
		status  data.Outcome
		detail  string
		seq     []string // what the check's server received
		victim  int      // requests the victim received
	}{
		{
			name: "S3_N8_redirect_to_another_host_not_followed",
			handler: func(v *flowServer) http.Handler {
				return redirectTo(v.URL + "/mcp")
			},
			status: data.NotCheckable, detail: "redirect to another host",
			seq: []string{"POST server/discover"},
		},
		{
			name: "S3_N8_redirect_to_another_host_at_hop_2_not_followed",
			handler: func(v *flowServer) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/mcp" {
						redirectTo("/r1")(w, r)
						return
					}
					redirectTo(v.URL+"/mcp")(w, r)
				})
			},
			status: data.NotCheckable, detail: "redirect to another host",
			seq: []string{"POST server/discover", "POST server/discover"},
		},
		{
			name: "S3_N4_legacy_sse_endpoint_on_another_host_not_posted_to",
			sse:  true,
			handler: func(v *flowServer) http.Handler {
				return newLegacySSEServer("/sse", v.URL+"/messages", answerWith(405, ""), legacyMux("2024-11-05", "a"))
			},
			status: data.NotCheckable, detail: data.DetailOtherHost,
			seq: []string{"POST server/discover", "GET"},
		},
		{
			name: "S3_N8_redirect_on_the_same_host_followed",
			handler: func(*flowServer) http.Handler {
				mux := legacyMux("2025-06-18", "a")
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/mcp" {
						// The same host, spelt in capitals, another path.
						redirectTo("https://A.TEST:8443/v2/mcp")(w, r)
						return
					}
					mux.ServeHTTP(w, r)
				})
			},
			status: data.Working, detail: "1 tool",
			seq: []string{"POST server/discover", "POST server/discover", "POST initialize", "POST initialize",
				"POST notifications/initialized", "POST notifications/initialized", "POST tools/list", "POST tools/list"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ca := testutil.MustCA(t)
			victim := startFlowServer(t, legacyMux("2025-06-18", "victim-tool"), serverOpts{host: "victim.test", ca: ca})
			srv := startFlowServer(t, c.handler(victim), serverOpts{host: "a.test", ca: ca, legacySSE: c.sse})
			tg := srv.target()
			if c.sse {
				tg.URL = srv.URL + "/sse"
			}
			res, rec := newTestChecker(t, mergeLabs(srv, victim), 0).Check(context.Background(), tg)
			if res.Status != c.status || res.Detail != c.detail {
				t.Errorf("check = %s %q, want %s %q; transcript:\n%s", res.Status, res.Detail, c.status, c.detail, transcriptText(rec))
			}
			srv.rec.wantSequence(t, c.seq...)
			if got := len(victim.rec.requests()); got != c.victim {
				t.Errorf("the other host received %d requests, want %d: %q", got, c.victim, victim.rec.requests())
			}
		})
	}
}

// TestOtherHost proves what "another host" is (rule S3): the host of the
// check's first request, compared as the planner keys hosts; a port or a
// path is no other host, a subdomain and the bare domain are.
func TestOtherHost(t *testing.T) {
	cases := []struct {
		name  string
		first string
		next  string
		other bool
	}{
		{"S3_same_host_other_path", "https://a.test/mcp", "https://a.test/v2/mcp", false},
		{"S3_same_host_other_port", "https://a.test/mcp", "https://a.test:8443/mcp", false},
		{"S3_same_host_other_case_and_trailing_dot", "https://a.test/mcp", "https://A.Test./mcp", false},
		{"S3_same_host_idna", "https://bücher.example/mcp", "https://xn--bcher-kva.example/mcp", false},
		{"S3_subdomain_is_another_host", "https://example.com/mcp", "https://www.example.com/mcp", true},
		{"S3_bare_domain_is_another_host", "https://www.example.com/mcp", "https://example.com/mcp", true},
		{"S3_another_name", "https://a.test/mcp", "https://victim.test/mcp", true},
		{"S3_ip_literal_is_another_host", "https://a.test/mcp", "https://8.8.8.8/mcp", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newTestGuard(t, GuardConfig{})
			if g.otherHost(mustURL(t, c.first)) {
				t.Fatalf("the first request %s counted as another host", c.first)
			}
			if got := g.otherHost(mustURL(t, c.next)); got != c.other {
				t.Errorf("after %s, otherHost(%s) = %v, want %v", c.first, c.next, got, c.other)
			}
		})
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatalf("parse %s: %v", s, err)
	}
	return u
}
