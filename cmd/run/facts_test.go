package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"plug.directory/prober/internal/testutil"
	"plug.directory/prober/site/record"
)

// sdkFactsServer is a go-sdk server behind the test CA that counts, at the
// server, what checks cost it: connections, TLS handshakes, requests.
type sdkFactsServer struct {
	labServer
	notAfter                    time.Time
	conns, handshakes, requests atomic.Int64
}

// answerDelay is what the server waits before each answer: the check's
// first-byte times must show it.
const answerDelay = 20 * time.Millisecond

func startSDKFactsServer(t *testing.T) *sdkFactsServer {
	t.Helper()
	s := &sdkFactsServer{notAfter: time.Now().Add(20 * 24 * time.Hour).Truncate(time.Second).UTC()}
	ca := testutil.MustCA(t)
	cert := ca.MustLeaf(t, time.Now().Add(-time.Hour), s.notAfter, "mcp.test")
	ms := mcp.NewServer(&mcp.Implementation{Name: "facts", Version: "1.0.0"}, nil)
	mcp.AddTool(ms, &mcp.Tool{Name: "echo", Description: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, &mcp.StreamableHTTPOptions{Stateless: true, DisableLocalhostProtection: true})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		time.Sleep(answerDelay)
		h.ServeHTTP(w, r)
	}))
	srv.Listener.Close()
	srv.Listener = testutil.ListenLoopback8443(t)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert},
		VerifyConnection: func(tls.ConnectionState) error { s.handshakes.Add(1); return nil }}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	addr := netip.MustParseAddrPort(srv.Listener.Addr().String()).Addr()
	s.labServer = labServer{url: "https://mcp.test:8443/mcp", resolve: "mcp.test:8443:" + addr.String(), caFile: ca.File}
	return s
}

// wantPlainCheck asserts the server saw since the counts before exactly
// what a check costs a stateless go-sdk server: one connection, one
// handshake, and the requests the check says it sent: server/discover
// and tools/list (go-sdk v1.8 speaks 2026-07-28).
func (s *sdkFactsServer) wantPlainCheck(t *testing.T, before [3]int64, requests int) {
	t.Helper()
	got := [3]int64{s.conns.Load() - before[0], s.handshakes.Load() - before[1], s.requests.Load() - before[2]}
	if got != [3]int64{1, 1, int64(requests)} || requests != 2 {
		t.Errorf("server saw %d connections, %d handshakes, %d requests; the check says %d requests; want 1, 1, 2", got[0], got[1], got[2], requests)
	}
}

func (s *sdkFactsServer) counts() [3]int64 {
	return [3]int64{s.conns.Load(), s.handshakes.Load(), s.requests.Load()}
}

// TestFactsPublished follows what a check sees on its way (the
// certificate, timings, how it spoke) from a real go-sdk server to what run -url prints and what the site
// publishes, each time with the server's own counts: learning them costs
// not a connection, handshake or request more than a plain check.
func TestFactsPublished(t *testing.T) {
	t.Parallel()
	s := startSDKFactsServer(t)
	lab := []string{"-lab", "-resolve", s.resolve, "-ca-file", s.caFile}
	t.Run("S3_run_url_json", func(t *testing.T) {
		before := s.counts()
		code, stdout, stderr := runArgs(t, append(lab, "-url", s.url, "-json")...)
		if code != 0 {
			t.Fatalf("exit %d; stderr %s", code, stderr)
		}
		var out oneOffJSON
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatal(err)
		}
		s.wantPlainCheck(t, before, out.Requests)
		if out.TLS == nil || !out.TLS.NotAfter.Equal(s.notAfter) || out.TLS.DaysLeft != 20 || out.TLS.Issuer != "CN=prober test CA" ||
			out.TLS.Version == nil || *out.TLS.Version != "TLS 1.3" || strings.Join(out.TLS.Names, ",") != "mcp.test" {
			t.Errorf("tls %+v; want the server's certificate, %v, 20 days left", out.TLS, s.notAfter)
		}
		if tm := out.Timings; tm == nil || tm.ConnectMS == nil || tm.TLSMS == nil || tm.DNSMS != nil || len(tm.FirstByteMS) != out.Requests {
			t.Fatalf("timings %+v: want connect, TLS, no lookup (the lab's override) and a first byte per request", tm)
		}
		// How it spoke: the stateless go-sdk server lists the SDK's
		// versions, keeps no session and answers in event streams.
		if !slices.Equal(out.DiscoverVersions, mcp.SupportedProtocolVersions()) || out.Session == nil || *out.Session ||
			out.Answers == nil || *out.Answers != "sse" || out.Protocol == nil || *out.Protocol != "2026-07-28" {
			t.Errorf("protocol %v, discover_versions %q, session %v, answers %v; want 2026-07-28, the SDK's versions, false, sse",
				out.Protocol, out.DiscoverVersions, out.Session, out.Answers)
		}
		for i, v := range out.Timings.FirstByteMS {
			if v < float64(answerDelay.Milliseconds()) {
				t.Errorf("answer %d: first byte after %v ms; the server waited %v", i+1, v, answerDelay)
			}
		}
	})
	t.Run("S3_run_url_text", func(t *testing.T) {
		before := s.counts()
		code, stdout, _ := runArgs(t, append(lab, "-url", s.url)...)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, stdout)
		}
		s.wantPlainCheck(t, before, 2)
		for _, want := range []string{"certificate expires in 20 days " + s.notAfter.Format(time.RFC3339) + ", TLS 1.3; issued by CN=prober test CA for mcp.test",
			"timings DNS none, connect ", ", first byte ",
			"protocol 2026-07-28 over streamable-http; no session; answers as event streams; server/discover lists " + strings.Join(mcp.SupportedProtocolVersions(), ", ")} {
			if !strings.Contains(squeeze(stdout), want) {
				t.Errorf("output lacks %q:\n%s", want, stdout)
			}
		}
	})
	t.Run("S3_published", func(t *testing.T) {
		c := planOneCheck(t, "facts", s.url)
		before := s.counts()
		r := c.run(t, lab...)
		s.wantPlainCheck(t, before, r.Requests)
		f, out := c.publish(t, time.Now())
		if c := f.Certificate; c == nil || !c.NotAfter.Equal(s.notAfter) || c.DaysLeft != nil || c.Message != "valid until "+s.notAfter.Format(time.DateOnly) || c.Warning ||
			!c.SeenAt.Equal(r.Started.Truncate(time.Millisecond)) {
			t.Errorf("certificate %+v; want the server's, valid until its day (beyond the warning), seen by the check", c)
		}
		tm := f.LastResult.Timings
		if tm == nil || tm.ConnectMS == nil || tm.TLSMS == nil || tm.DNSMS != nil || len(tm.FirstByteMS) != r.Requests || *tm.WaitMS < 2*answerDelay.Milliseconds() {
			t.Errorf("published timings %+v; want connect, TLS, no lookup and the server's %v per answer", tm, answerDelay)
		}
		if p := f.Protocol; p == nil || p.Version != "2026-07-28" || p.Era != "discover" || !p.Speaks20260728 || p.Session == nil || *p.Session ||
			p.Answers == nil || *p.Answers != "sse" || !slices.Equal(p.DiscoverVersions, mcp.SupportedProtocolVersions()) {
			t.Errorf("published protocol %+v; want 2026-07-28 (discover), no session, sse, the SDK's versions", p)
		}
		var idx record.IndexFile
		if b, err := os.ReadFile(filepath.Join(out, "index.json")); err != nil || json.Unmarshal(b, &idx) != nil {
			t.Fatalf("index.json: %v", err)
		}
		if idx.Protocols.Speaks20260728 != 1 || !slices.Equal(idx.Protocols.Versions, []record.VersionTotal{{Version: "2026-07-28", Count: 1}}) || idx.ToolProblems != 0 {
			t.Errorf("index counts %+v, %d with tool problems; want the one server speaking 2026-07-28, none", idx.Protocols, idx.ToolProblems)
		}
		if d := f.Daily[len(f.Daily)-1]; d.Phases == nil || d.Phases.Wait == nil || d.Phases.Wait.P50 != *tm.WaitMS || d.Phases.DNS != nil {
			t.Errorf("today's phases %+v; want the check's", d.Phases)
		}
	})
}
